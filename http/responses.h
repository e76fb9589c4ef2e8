// Responses: how every route of the HTTP API answers — JSON bodies and
// OpenAI error objects (http/openai_api.h). Internal to http/ (includes
// cpp-httplib).
#pragma once

#include <httplib.h>

#include <string>

#include "http/openai_api.h"

namespace troupe::http {

inline void SendJson(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(Dump(body), "application/json");
}

inline void SendError(httplib::Response& res, const ApiError& e) { SendJson(res, e.status, ErrorBody(e)); }

inline ApiError Unavailable(const std::string& message, const std::string& code = "UNAVAILABLE") {
  ApiError e;
  e.status = 503;
  e.type = "server_error";
  e.code = code;
  e.message = message;
  return e;
}

}  // namespace troupe::http
