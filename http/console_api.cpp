// The admin console's routes on the head's HTTP port:
//
//   GET /, /console.js, /console.css   the page (http/console/, embedded at
//                                      build time by cmake/EmbedFiles.cmake)
//   GET /api/v1/cluster|nodes|coverage|jobs|sessions
//   GET /api/v1/sessions/ID/timeline   a session's per-hop waterfall
//   GET /api/v1/metrics/history[?seconds=S]   charts (default 600 s)
//
// Each view is the head's JSON (v1::ConsoleQuery, scheduling/console_views.h)
// passed through. Access (http/access.h): the page is open (it holds no
// data); the views need an admin key unless the API listens on loopback.
// Its actions, POST /api/v1/nodes/ID/drain and POST /api/v1/jobs/ID/cancel,
// are the admin routes' (http_server.cpp) and always need the admin key.
#include <httplib.h>

#include <iostream>
#include <map>
#include <string>

#include "http/http_server.h"
#include "http/responses.h"
#include "messages/wire_error.h"

namespace troupe::http {
namespace console {
const std::map<std::string, std::string>& EmbeddedFiles();  // generated
}  // namespace console

namespace {

std::string ContentType(const std::string& name) {
  auto ends = [&](const std::string& ext) {
    return name.size() >= ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

}  // namespace

void HttpServer::ConsoleRoutes() {
  httplib::Server& srv = *server_;
  for (const auto& [name, bytes] : console::EmbeddedFiles()) {
    const std::string path = name == "index.html" ? "/" : "/" + name;
    const std::string type = ContentType(name);
    const std::string* content = &bytes;
    srv.Get(path, [content, type](const httplib::Request&, httplib::Response& res) {
      res.set_header("Cache-Control", "no-cache");
      res.set_content(*content, type);
    });
  }
  // One view from the head; `session_id` for a timeline, `seconds` for the history.
  auto view = [this](httplib::Response& res, const std::string& name, uint64_t session_id, double seconds) {
    auto backend = options_.connect();
    if (!backend.ok()) return SendError(res, Unavailable(backend.status().ToString()));
    Result<std::string> json = (*backend)->Console(name, session_id, seconds);
    if (!json.ok()) {
      ApiError e = ErrorFromStatus(json.status());
      if (WireCodeOf(json.status()) == v1::UNKNOWN_SESSION) e.status = 404;
      return SendError(res, e);
    }
    res.status = 200;
    res.set_header("Cache-Control", "no-store");
    res.set_content(*json, "application/json");
  };
  srv.Get(R"(/api/v1/(cluster|nodes|coverage|jobs|sessions))",
          [view](const httplib::Request& req, httplib::Response& res) { view(res, req.matches[1].str(), 0, 0); });
  srv.Get(R"(/api/v1/sessions/(\d+)/timeline)", [view](const httplib::Request& req, httplib::Response& res) {
    uint64_t id = 0;
    try {
      id = std::stoull(req.matches[1].str());
    } catch (const std::exception&) {
      ApiError e;
      e.status = 400;
      e.code = "invalid_session_id";
      e.message = "session id '" + req.matches[1].str() + "' is not a number in [0, 2^64)";
      return SendError(res, e);
    }
    view(res, "timeline", id, 0);
  });
  srv.Get("/api/v1/metrics/history", [view](const httplib::Request& req, httplib::Response& res) {
    double seconds = 600;
    if (req.has_param("seconds")) {
      try {
        seconds = std::stod(req.get_param_value("seconds"));
      } catch (const std::exception&) {
        seconds = -1;
      }
      if (!(seconds > 0)) {
        ApiError e;
        e.status = 400;
        e.code = "invalid_value";
        e.param = "seconds";
        e.message = "seconds must be a number above 0, got '" + req.get_param_value("seconds") + "'";
        return SendError(res, e);
      }
    }
    view(res, "history", 0, seconds);
  });
}

}  // namespace troupe::http
