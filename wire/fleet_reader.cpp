#include "wire/fleet_reader.hpp"

#include <nats/nats.h>

#include <stdexcept>

#include "wire/nats_options.hpp"

namespace vigil {

namespace {

std::string failure(const std::string& what, natsStatus s) {
  std::string t = what + ": " + natsStatus_GetText(s);
  if (const char* last = nats_GetLastError(nullptr); last && *last && t.find(last) == std::string::npos)
    t += std::string(" (") + last + ")";
  return t;
}

}  // namespace

struct FleetReader::Impl {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  natsSubscription* sub = nullptr;
  ~Impl() {
    natsSubscription_Destroy(sub);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
  }
};

namespace {

// Connects with the options' servers and credentials; throws saying why not.
natsConnection* connect_to(const FleetReaderOptions& o) {
  natsConnection* nc = nullptr;
  natsOptions* opts = nullptr;
  natsStatus s = make_nats_options({o.servers, "vigil-listen", 3000, o.ca, "", "", o.creds, o.user, o.password}, &opts);
  if (s == NATS_OK) s = natsConnection_Connect(&nc, opts);
  natsOptions_Destroy(opts);
  if (s != NATS_OK) {
    std::string urls;
    for (const std::string& u : o.servers) urls += (urls.empty() ? "" : ",") + u;
    throw std::runtime_error(failure("cannot connect to " + urls, s));
  }
  return nc;
}

}  // namespace

FleetReader::FleetReader(const FleetReaderOptions& o) : impl_(std::make_unique<Impl>()) {
  impl_->nc = connect_to(o);
  natsStatus s = NATS_OK;
  if ((s = natsConnection_JetStream(&impl_->js, impl_->nc, nullptr)) != NATS_OK)
    throw std::runtime_error(failure("JetStream", s));
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = o.stream.c_str();
  so.Config.AckPolicy = js_AckExplicit;
  so.Config.MaxAckPending = 65536;
  if (o.since_utc_ns > 0) {
    so.Config.DeliverPolicy = js_DeliverByStartTime;
    so.Config.OptStartTime = o.since_utc_ns;
  }
  jsErrCode jerr = jsErrCode(0);
  s = js_PullSubscribe(&impl_->sub, impl_->js, o.subject.c_str(), o.durable.c_str(), nullptr, &so, &jerr);
  if (s != NATS_OK)
    throw std::runtime_error(failure("stream " + o.stream + ", consumer " + o.durable + " on " + o.subject, s));
}

FleetReader::~FleetReader() = default;

size_t FleetReader::fetch(int batch, int timeout_ms, const std::function<void(const Message&)>& on_message) {
  natsMsgList list{};
  jsErrCode jerr = jsErrCode(0);
  const natsStatus s = natsSubscription_Fetch(&list, impl_->sub, batch, timeout_ms, &jerr);
  if (s != NATS_OK) {
    if (s != NATS_TIMEOUT) last_error_ = failure("fetch", s);
    natsMsgList_Destroy(&list);
    return 0;
  }
  for (int i = 0; i < list.Count; ++i) {
    natsMsg* m = list.Msgs[i];
    const char *rig = "", *run = "", *seq = "";
    natsMsgHeader_Get(m, "Vigil-Rig", &rig);
    natsMsgHeader_Get(m, "Vigil-Run", &run);
    natsMsgHeader_Get(m, "Vigil-Seq", &seq);
    const char* data = natsMsg_GetData(m);
    on_message({rig ? rig : "", run ? run : "", seq ? seq : "", natsMsg_GetSubject(m),
                std::string_view(data ? data : "", size_t(natsMsg_GetDataLength(m)))});
    natsMsg_Ack(m, nullptr);
  }
  const size_t n = size_t(list.Count);
  natsMsgList_Destroy(&list);
  return n;
}

std::string FleetReader::state() const {
  switch (natsConnection_Status(impl_->nc)) {
    case NATS_CONN_STATUS_CONNECTED: return "connected";
    case NATS_CONN_STATUS_RECONNECTING: return "reconnecting";
    case NATS_CONN_STATUS_CLOSED: return "closed";
    default: return "connecting";
  }
}

namespace {

// One central stream sourcing `box_stream` from each domain (kv: a key-value bucket's stream,
// the latest message of each key kept). Adds "created NAME"/"updated NAME" to `did`.
natsStatus source_stream(jsCtx* js, const std::string& name, const std::vector<std::string>& domains,
                         const std::string& box_stream, int replicas, bool kv, std::string& did) {
  std::vector<std::string> prefixes;
  std::vector<jsExternalStream> externals(domains.size());
  std::vector<jsStreamSource> sources(domains.size());
  std::vector<jsStreamSource*> source_ptrs;
  for (const std::string& d : domains) prefixes.push_back("$JS." + d + ".API");
  for (size_t i = 0; i < domains.size(); ++i) {
    externals[i].APIPrefix = prefixes[i].c_str();
    externals[i].DeliverPrefix = "";  // NULL crashes js_AddStream in cnats 3.4
    sources[i] = jsStreamSource{};
    sources[i].Name = box_stream.c_str();
    sources[i].External = &externals[i];
    source_ptrs.push_back(&sources[i]);
  }
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = name.c_str();
  cfg.Storage = js_FileStorage;
  cfg.Replicas = replicas;
  cfg.Sources = source_ptrs.data();
  cfg.SourcesLen = int(source_ptrs.size());
  // A bucket's stream as nats-server makes one, so that clients bind to it as a bucket; without
  // subjects of its own: it takes only what it sources (a subject here would also capture the
  // boxes' puts through their leaf connections).
  if (kv) {
    cfg.MaxMsgsPerSubject = 1;
    cfg.AllowRollup = true;
    cfg.DenyDelete = true;
    cfg.AllowDirect = true;
    cfg.Discard = js_DiscardNew;
  }
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = jsErrCode(0);
  natsStatus s = js_AddStream(&si, js, &cfg, nullptr, &jerr);
  std::string what = "created";
  if (s != NATS_OK && jerr == JSStreamNameExistErr) {
    what = "updated";
    s = js_UpdateStream(&si, js, &cfg, nullptr, &jerr);
  }
  jsStreamInfo_Destroy(si);
  if (s == NATS_OK) did += (did.empty() ? "" : "; ") + what + " " + name;
  return s;
}

}  // namespace

std::string create_fleet_stream(const FleetReaderOptions& o, const std::string& name,
                                const std::vector<std::string>& domains, const std::string& box_stream, int replicas,
                                const std::string& bucket) {
  natsConnection* nc = connect_to(o);
  jsCtx* js = nullptr;
  std::string did, why;
  natsStatus s = natsConnection_JetStream(&js, nc, nullptr);
  if (s != NATS_OK) why = failure("JetStream", s);
  if (why.empty() && (s = source_stream(js, name, domains, box_stream, replicas, false, did)) != NATS_OK)
    why = failure("stream " + name, s);
  const std::string kv = "KV_" + bucket;
  if (why.empty() && (s = source_stream(js, kv, domains, kv, replicas, true, did)) != NATS_OK)
    why = failure("bucket " + bucket + " (stream " + kv + ")", s);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  if (!why.empty()) throw std::runtime_error(why);
  std::string from;
  for (const std::string& d : domains) from += (from.empty() ? "" : ", ") + d;
  return did + " (" + std::to_string(replicas) + " replicas), sourcing " + box_stream + " and " + kv + " from " + from;
}

}  // namespace vigil
