#include "transport/zap_handler.h"

#include <sstream>
#include <vector>

#include "transport/socket_options.h"

namespace troupe::transport {
namespace {

std::string Text(const zmq::message_t& m) { return std::string(m.data<char>(), m.size()); }

std::string UniqueStopEndpoint(const void* self) {
  static std::atomic<uint64_t> next{0};
  std::ostringstream s;
  s << "inproc://troupe-zap-stop-" << self << "-" << next.fetch_add(1);
  return s.str();
}

}  // namespace

ZapHandler::ZapHandler(zmq::context_t& context, std::map<std::string, Allowlist> domains, ZapRefusalFn on_refused)
    : context_(context),
      domains_(std::move(domains)),
      on_refused_(std::move(on_refused)),
      rep_(context, zmq::socket_type::rep),
      stop_recv_(context, zmq::socket_type::pair),
      stop_send_(context, zmq::socket_type::pair) {}

Result<std::unique_ptr<ZapHandler>> ZapHandler::Start(zmq::context_t& context, Allowlist allowlist,
                                                      std::string domain) {
  std::map<std::string, Allowlist> domains;
  domains.emplace(std::move(domain), std::move(allowlist));
  return Start(context, std::move(domains));
}

Result<std::unique_ptr<ZapHandler>> ZapHandler::Start(zmq::context_t& context, std::map<std::string, Allowlist> domains,
                                                      ZapRefusalFn on_refused) {
  if (domains.empty()) return Status::InvalidArgument("ZAP handler: no domain");
  for (const auto& [domain, allowlist] : domains) {
    if (allowlist.empty()) {
      return Status::InvalidArgument("ZAP handler: empty allowlist for domain '" + domain +
                                     "' would refuse every peer");
    }
  }
  std::unique_ptr<ZapHandler> h(new ZapHandler(context, std::move(domains), std::move(on_refused)));
  for (zmq::socket_t* s : {&h->rep_, &h->stop_recv_, &h->stop_send_}) {
    TROUPE_RETURN_IF_ERROR(SetIntOption(*s, ZMQ_LINGER, 0, "ZMQ_LINGER"));
  }
  if (zmq_bind(h->rep_.handle(), kZapEndpoint) != 0) {
    if (zmq_errno() == EADDRINUSE) {
      return Status::InvalidArgument(std::string("ZAP handler: ") + kZapEndpoint +
                                     " is already bound in this context (one handler per "
                                     "context)");
    }
    return ZmqError(std::string("ZAP handler: binding ") + kZapEndpoint);
  }
  h->stop_endpoint_ = UniqueStopEndpoint(h.get());
  if (zmq_bind(h->stop_recv_.handle(), h->stop_endpoint_.c_str()) != 0 ||
      zmq_connect(h->stop_send_.handle(), h->stop_endpoint_.c_str()) != 0) {
    return ZmqError("ZAP handler: stop pipe");
  }
  // Starting the thread is a full memory barrier: the REP and stop_recv
  // sockets migrate to it here and are touched by no other thread after.
  h->thread_ = std::thread([raw = h.get()] { raw->Run(); });
  return h;
}

ZapHandler::~ZapHandler() { Stop(); }

void ZapHandler::Stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (!thread_.joinable()) return;
  zmq::message_t stop;
  // The PAIR pipe has room for one message; should it fail, the handler
  // still polls with a timeout and would miss the stop only if the context
  // were already gone, which Start/Stop's contract excludes.
  (void)zmq_msg_send(stop.handle(), stop_send_.handle(), 0);
  thread_.join();
  stop_send_.close();
}

ZapCounters ZapHandler::counters() const {
  ZapCounters c;
  c.accepted = accepted_.load();
  c.rejected_unknown_key = rejected_unknown_key_.load();
  c.rejected_malformed = rejected_malformed_.load();
  c.rejected = c.rejected_unknown_key + c.rejected_malformed;
  return c;
}

void ZapHandler::Run() {
  while (true) {
    std::vector<zmq_pollitem_t> items = {{rep_.handle(), 0, ZMQ_POLLIN, 0}, {stop_recv_.handle(), 0, ZMQ_POLLIN, 0}};
    if (zmq_poll(items.data(), static_cast<int>(items.size()), -1) < 0) {
      if (zmq_errno() == EINTR) continue;
      break;  // context terminated
    }
    if (items[1].revents & ZMQ_POLLIN) break;
    if (!(items[0].revents & ZMQ_POLLIN)) continue;
    std::vector<zmq::message_t> request;
    bool more = true;
    while (more) {
      zmq::message_t part;
      if (zmq_msg_recv(part.handle(), rep_.handle(), 0) < 0) break;
      more = part.more();
      request.push_back(std::move(part));
    }
    if (more) break;  // context terminated mid-request
    Answer(request);
  }
  // Unbinding is synchronous for inproc (closing alone frees the name only
  // once the socket is reaped), so a new handler can bind right after Stop().
  (void)zmq_unbind(rep_.handle(), kZapEndpoint);
  rep_.close();
  stop_recv_.close();
}

void ZapHandler::Answer(std::vector<zmq::message_t>& request) {
  // Request: version, request id, domain, address, identity, mechanism, credentials...
  std::string request_id = request.size() > 1 ? Text(request[1]) : "";
  std::string status = "400";
  std::string text;
  std::string user_id;
  std::string key;  // the peer's, in Z85, when it sent one
  if (request.size() < 6 || Text(request[0]) != "1.0") {
    text = "malformed ZAP request";
    rejected_malformed_.fetch_add(1);
  } else if (domains_.count(Text(request[2])) == 0) {
    text = "unknown domain";
    rejected_malformed_.fetch_add(1);
  } else if (Text(request[5]) != "CURVE" || request.size() != 7) {
    text = "CURVE required";
    rejected_malformed_.fetch_add(1);
  } else {
    const Allowlist& allowlist = domains_.at(Text(request[2]));
    std::string_view raw(request[6].data<char>(), request[6].size());
    auto z85 = EncodeZ85Key(raw);
    if (z85.ok()) key = *z85;
    if (z85.ok() && allowlist.Contains(*z85)) {
      status = "200";
      text = "OK";
      user_id = *z85;
      accepted_.fetch_add(1);
    } else {
      text = "public key not in allowlist";
      rejected_unknown_key_.fetch_add(1);
    }
  }
  if (status != "200" && on_refused_) {
    ZapRefusal r;
    r.domain = request.size() > 2 ? Text(request[2]) : "";
    r.address = request.size() > 3 ? Text(request[3]) : "";
    r.public_key = key;
    r.reason = text;
    on_refused_(r);
  }
  // Reply: version, request id, status code, status text, user id, metadata.
  // Never blocking: the answer to a handshake whose connection left is lost.
  const std::string reply[] = {"1.0", request_id, status, text, user_id, ""};
  for (size_t i = 0; i < 6; ++i) {
    zmq::message_t part(reply[i].data(), reply[i].size());
    if (zmq_msg_send(part.handle(), rep_.handle(), ZMQ_DONTWAIT | (i + 1 < 6 ? ZMQ_SNDMORE : 0)) < 0) return;
  }
}

}  // namespace troupe::transport
