#include "actors/node_security.h"

namespace troupe::actors {

Result<transport::SecurityConfig> NodeLinkSecurity(const cluster::NodeConfig& c) {
  if (!c.curve) return transport::PlainSecurity(c.insecure);
  TROUPE_ASSIGN_OR_RETURN(transport::SecurityConfig sec,
                          transport::CurveSecurityFromFiles(c.secret_key_file, c.allowlist));
  sec.insecure = c.insecure;
  return sec;
}

}  // namespace troupe::actors
