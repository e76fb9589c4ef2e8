// NodeLinkSecurity: the security of a node's links as its config says —
// plain (refused off loopback unless `insecure`), or CURVE with its secret
// key and its allowlist. Used for the node's own links and for the
// connection a joining shard asks the head over (actors/join.h).
#pragma once

#include "cluster/node_config.h"
#include "pipeline/status.h"
#include "transport/security.h"

namespace troupe::actors {

Result<transport::SecurityConfig> NodeLinkSecurity(const cluster::NodeConfig& config);

}  // namespace troupe::actors
