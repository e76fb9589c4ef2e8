# Shared by the scripts in this folder (sourced, not run).
#   LOG_TAG=setup; . scripts/lib.sh; log "..."; apt_install pkg...

log() { printf '\033[1m[%s]\033[0m %s\n' "${LOG_TAG:-troupe}" "$*" >&2; }

# Installs the Debian packages among "$@" that are not installed yet (sudo
# when not root); does nothing when all are there.
apt_install() {
  local sudo="" missing=() p
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}
