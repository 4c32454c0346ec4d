// Not real-time: the output thread only appends to the queue under a mutex the sink's thread holds
// for a few pointer moves; everything that waits (connecting, the JetStream API, acknowledgements)
// happens on the sink's thread or the client library's.
#include "sinks/nats_sink.hpp"

#include <nats/nats.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>

#include "core/clock.hpp"
#include "core/rt_log.hpp"
#include "core/thread_name.hpp"
#include "wire/datagram_batch.hpp"
#include "wire/nats_options.hpp"

namespace vigil {

FleetOutputSettings resolve_fleet_output(FleetOutputSettings s) {
  if (s.rig.empty()) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::snprintf(host, sizeof host, "rig");
    std::string rig(host);
    rig = rig.substr(0, rig.find('.'));
    for (char& c : rig)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
    s.rig = rig.substr(0, 64);
  }
  if (s.subject_prefix.empty()) s.subject_prefix = "vigil." + s.rig;
  if (s.types.empty()) s.types = kFleetEventTypes;
  return s;
}

namespace {

// An event accepted from the output thread, not yet made a message.
struct Fresh {
  uint64_t seq;
  std::string type, text;
};

std::string status_text(natsStatus s, const char* detail = nullptr) {
  std::string t = natsStatus_GetText(s);
  if (detail && *detail) t += std::string(": ") + detail;
  return t;
}

}  // namespace

struct NatsSink::Impl {
  FleetOutputSettings settings;
  std::string run_id;
  SinkCounters& counters;
  RtLog log{256};

  // Guarded by mutex: the unsent (fresh from the output thread, and those to send again) and what
  // the library reported.
  mutable std::mutex mutex;
  mutable std::condition_variable wake, acked_cv;
  std::deque<Fresh> fresh;
  std::deque<natsMsg*> again;  // not acknowledged: sent again unchanged, before any fresh one
  std::string last_error, state = "connecting";
  std::string latest_status, latest_start;  // for the bucket, put by the sink's thread
  bool stopping = false;
  bool check_stream = false;  // a publish found no stream: create it again (a wiped server)
  bool closed = false;        // the library's closed callback came: no callback follows it

  uint64_t next_seq = 0;  // output thread
  std::atomic<uint64_t> accepted{0}, published{0}, acknowledged{0}, duplicates{0}, resent{0}, dropped{0},
      failed{0}, in_flight{0}, connects{0}, connect_failures{0}, disconnects{0}, replicas{0};
  std::vector<bool> wanted;  // by index into kFleetEventTypes
  int64_t next_status_mono_ns = -1;

  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  kvStore* kv = nullptr;
  std::thread thread;

  Impl(const FleetOutputSettings& s, std::string run, SinkCounters& c)
      : settings(resolve_fleet_output(s)), run_id(std::move(run)), counters(c) {
    wanted.assign(kFleetEventTypes.size(), false);
    for (const std::string& t : settings.types)
      for (size_t i = 0; i < kFleetEventTypes.size(); ++i)
        if (kFleetEventTypes[i] == t) wanted[i] = true;
  }

  bool selected(std::string_view type) const noexcept {
    for (size_t i = 0; i < kFleetEventTypes.size(); ++i)
      if (kFleetEventTypes[i] == type) return wanted[i];
    return false;  // a type this output does not know is not published
  }

  // Output thread, mutex held.
  void accept(std::string_view type, std::string_view text) {
    if (fresh.size() + again.size() >= settings.queue_events) {  // the oldest unsent goes
      if (!again.empty()) {
        natsMsg_Destroy(again.front());
        again.pop_front();
      } else {
        fresh.pop_front();
      }
      dropped.fetch_add(1, std::memory_order_relaxed);
    }
    fresh.push_back({next_seq++, std::string(type), std::string(text)});
    accepted.fetch_add(1, std::memory_order_relaxed);
  }

  // Output thread, mutex held: the rig's presence in the bucket follows its start and status
  // events, whether or not the stream takes them.
  void note_presence(std::string_view type, std::string_view text) {
    if (type == "status") latest_status = text;
    else if (type == "start") latest_start = text;
  }

  // Any thread (the sink's, the client library's callbacks): the log is written under the mutex,
  // so that its single-producer queue has one producer at a time.
  void set_state(const char* s, const std::string& error = {}) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (state != s) log.printf(s == std::string("connected") ? 5 : 4, "nats: %s%s%s", s, error.empty() ? "" : ": ",
                               error.c_str());
    state = s;
    if (!error.empty()) last_error = error;
  }

  static void on_ack(jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure) {
    auto* self = static_cast<Impl*>(closure);
    {
      const std::lock_guard<std::mutex> lock(self->mutex);
      if (pa) {
        self->acknowledged.fetch_add(1, std::memory_order_relaxed);
        if (pa->Duplicate) self->duplicates.fetch_add(1, std::memory_order_relaxed);
        natsMsg_Destroy(msg);
      } else {
        self->failed.fetch_add(1, std::memory_order_relaxed);
        if (pae) {
          self->last_error = status_text(pae->Err, pae->ErrText);
          if (pae->Err == NATS_NO_RESPONDERS || pae->ErrCode == 503) self->check_stream = true;
        }
        self->again.push_back(msg);  // kept, unchanged, to be sent again: the message id makes it safe
      }
      self->in_flight.fetch_sub(1, std::memory_order_relaxed);
    }
    self->wake.notify_one();
    self->acked_cv.notify_all();
  }

  static void on_disconnected(natsConnection*, void* closure) {
    auto* self = static_cast<Impl*>(closure);
    self->disconnects.fetch_add(1, std::memory_order_relaxed);
    self->set_state("reconnecting", "disconnected from the server");
  }
  // The last callback the library makes for a connection: after it, none touches this object.
  static void on_closed(natsConnection*, void* closure) {
    auto* self = static_cast<Impl*>(closure);
    const std::lock_guard<std::mutex> lock(self->mutex);
    self->closed = true;
    self->acked_cv.notify_all();
  }
  static void on_reconnected(natsConnection* nc, void* closure) {
    auto* self = static_cast<Impl*>(closure);
    char url[256] = {};
    natsConnection_GetConnectedUrl(nc, url, sizeof url);
    self->set_state("connected");
    {
      const std::lock_guard<std::mutex> lock(self->mutex);  // the log's producers take turns under it
      self->log.printf(5, "nats: reconnected to %s", url);
    }
    self->wake.notify_one();
  }

  natsStatus connect() {
    NatsAccess access{settings.servers, "vigild " + settings.rig, 2000, settings.ca, settings.cert, settings.key,
                      settings.creds, settings.user, settings.password};
    natsOptions* opts = nullptr;
    natsStatus s = make_nats_options(access, &opts);
    if (s == NATS_OK) s = natsOptions_SetDisconnectedCB(opts, on_disconnected, this);
    if (s == NATS_OK) s = natsOptions_SetReconnectedCB(opts, on_reconnected, this);
    if (s == NATS_OK) s = natsOptions_SetClosedCB(opts, on_closed, this);
    {
      const std::lock_guard<std::mutex> lock(mutex);
      closed = false;  // this connection's closed callback is still to come
    }
    if (s == NATS_OK) s = natsConnection_Connect(&nc, opts);
    natsOptions_Destroy(opts);
    if (s != NATS_OK) return s;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = int64_t(settings.ack_timeout_s * 1000);
    jo.PublishAsync.MaxPending = int64_t(settings.max_in_flight) + 16;
    jo.PublishAsync.AckHandler = on_ack;
    jo.PublishAsync.AckHandlerClosure = this;
    s = natsConnection_JetStream(&js, nc, &jo);
    if (s != NATS_OK) {
      natsConnection_Destroy(nc);
      nc = nullptr;
    }
    return s;
  }

  // The stream (subjects <prefix>.>) and the bucket: created when absent, the subject added to a
  // stream that other rigs share.
  natsStatus ensure_stream(std::string& why) {
    const std::string subject = settings.subject_prefix + ".>";
    jsStreamInfo* si = nullptr;
    jsErrCode jerr = jsErrCode(0);
    natsStatus s = js_GetStreamInfo(&si, js, settings.stream.c_str(), nullptr, &jerr);
    if (s == NATS_NOT_FOUND) {
      jsStreamConfig cfg;
      jsStreamConfig_Init(&cfg);
      cfg.Name = settings.stream.c_str();
      const char* subjects[] = {subject.c_str()};
      cfg.Subjects = subjects;
      cfg.SubjectsLen = 1;
      cfg.Storage = js_FileStorage;
      s = js_AddStream(&si, js, &cfg, nullptr, &jerr);
    } else if (s == NATS_OK) {
      bool covered = false;
      for (int i = 0; i < si->Config->SubjectsLen; ++i)
        if (subject == si->Config->Subjects[i] || std::string(si->Config->Subjects[i]) == ">") covered = true;
      if (!covered && si->Config->SubjectsLen >= 0) {
        std::vector<const char*> subjects(si->Config->Subjects, si->Config->Subjects + si->Config->SubjectsLen);
        subjects.push_back(subject.c_str());
        jsStreamConfig cfg = *si->Config;
        cfg.Subjects = subjects.data();
        cfg.SubjectsLen = int(subjects.size());
        jsStreamInfo* updated = nullptr;
        s = js_UpdateStream(&updated, js, &cfg, nullptr, &jerr);
        jsStreamInfo_Destroy(updated);
      }
    }
    if (s == NATS_OK && si) replicas.store(uint64_t(std::max(1L, long(si->Config->Replicas))), std::memory_order_relaxed);
    jsStreamInfo_Destroy(si);
    if (s != NATS_OK) {
      why = "stream " + settings.stream + ": " + status_text(s, nats_GetLastError(nullptr));
      if (s == NATS_NO_RESPONDERS || s == NATS_TIMEOUT)
        why += " (does the server run JetStream? nats-server -js, or jetstream {} in its config)";
      return s;
    }
    if (!kv) {
      kvConfig kc;
      kvConfig_Init(&kc);
      kc.Bucket = settings.bucket.c_str();
      kc.History = 1;
      kc.StorageType = js_FileStorage;
      s = js_CreateKeyValue(&kv, js, &kc);
      if (s != NATS_OK) s = js_KeyValue(&kv, js, settings.bucket.c_str());
      if (s != NATS_OK) why = "bucket " + settings.bucket + ": " + status_text(s, nats_GetLastError(nullptr));
    }
    return s;
  }

  natsMsg* make_message(const Fresh& f) {
    const std::string subject = settings.subject_prefix + "." + f.type;
    natsMsg* m = nullptr;
    if (natsMsg_Create(&m, subject.c_str(), nullptr, f.text.data(), int(f.text.size())) != NATS_OK) return nullptr;
    const std::string seq = std::to_string(f.seq);
    const std::string id = settings.rig + "-" + run_id + "-" + seq;
    if (natsMsgHeader_Set(m, "Nats-Msg-Id", id.c_str()) != NATS_OK ||
        natsMsgHeader_Set(m, "Vigil-Rig", settings.rig.c_str()) != NATS_OK ||
        natsMsgHeader_Set(m, "Vigil-Run", run_id.c_str()) != NATS_OK ||
        natsMsgHeader_Set(m, "Vigil-Seq", seq.c_str()) != NATS_OK) {
      natsMsg_Destroy(m);
      return nullptr;
    }
    return m;
  }

  static uint64_t seq_of(natsMsg* m) {
    const char* v = nullptr;
    if (natsMsgHeader_Get(m, "Vigil-Seq", &v) != NATS_OK || !v) return UINT64_MAX;
    return std::strtoull(v, nullptr, 10);
  }

  // Sink thread, before the stream is made again: every message still in flight is let fail first
  // (there is no stream to take it), and those to send again are put in Vigil-Seq order. Without
  // the wait, one that reached the new stream would land ahead of an earlier one that had failed,
  // and the stream would hold the events out of order. Bounded by the acknowledgement timeout.
  void settle_before_making_the_stream() {
    std::unique_lock<std::mutex> lock(mutex);
    acked_cv.wait_for(lock, std::chrono::duration<double>(settings.ack_timeout_s + 1.0),
                      [&] { return stopping || in_flight.load(std::memory_order_relaxed) == 0; });
    std::stable_sort(again.begin(), again.end(), [](natsMsg* a, natsMsg* b) { return seq_of(a) < seq_of(b); });
  }

  // One message out, the oldest to send again first; whether there was one.
  bool publish_one() {
    natsMsg* m = nullptr;
    bool is_again = false;
    {
      std::unique_lock<std::mutex> lock(mutex);
      if (!again.empty()) {
        m = again.front();
        again.pop_front();
        is_again = true;
      } else if (!fresh.empty()) {
        Fresh f = std::move(fresh.front());
        fresh.pop_front();
        lock.unlock();
        m = make_message(f);
        if (!m) {  // out of memory: lost, and counted
          dropped.fetch_add(1, std::memory_order_relaxed);
          return true;
        }
      } else {
        return false;
      }
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = int64_t(settings.ack_timeout_s * 1000);
    in_flight.fetch_add(1, std::memory_order_relaxed);
    const natsStatus s = js_PublishMsgAsync(js, &m, &po);
    if (s != NATS_OK) {  // not taken (the connection went): first in line again
      in_flight.fetch_sub(1, std::memory_order_relaxed);
      const std::lock_guard<std::mutex> lock(mutex);
      last_error = status_text(s, nats_GetLastError(nullptr));
      again.push_front(m);
      return false;
    }
    published.fetch_add(1, std::memory_order_relaxed);
    if (is_again) resent.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  void put_presence() {
    std::string status, start;
    {
      const std::lock_guard<std::mutex> lock(mutex);
      status.swap(latest_status);
      start.swap(latest_start);
    }
    if (!kv) return;
    for (const auto& [key, text] : {std::pair<const char*, std::string*>{"start", &start}, {"status", &status}}) {
      if (text->empty()) continue;
      uint64_t rev = 0;
      const std::string k = settings.rig + "." + key;
      if (const natsStatus s = kvStore_Put(&rev, kv, k.c_str(), text->data(), int(text->size())); s != NATS_OK) {
        const std::lock_guard<std::mutex> lock(mutex);
        last_error = "bucket " + settings.bucket + ": " + status_text(s, nats_GetLastError(nullptr));
        if (s == NATS_NO_RESPONDERS) check_stream = true;  // the bucket is gone: made again
        if (key == std::string("start")) latest_start = *text;  // the start is kept until it is there
      }
    }
  }

  void run() {
    name_this_thread("vigil-nats");
    double backoff_s = 0.25;
    bool ready = false;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        if (stopping) break;
      }
      if (!nc) {
        const natsStatus s = connect();
        if (s != NATS_OK) {
          connect_failures.fetch_add(1, std::memory_order_relaxed);
          const bool auth = s == NATS_CONNECTION_AUTH_FAILED || s == NATS_NOT_PERMITTED;
          set_state(auth ? "refused" : "connecting", status_text(s, nats_GetLastError(nullptr)));
          jsCtx_Destroy(js);
          js = nullptr;
          natsConnection_Destroy(nc);
          nc = nullptr;
          std::unique_lock<std::mutex> lock(mutex);
          wake.wait_for(lock, std::chrono::duration<double>(backoff_s), [&] { return stopping; });
          backoff_s = std::min(backoff_s * 2, 5.0);
          continue;
        }
        connects.fetch_add(1, std::memory_order_relaxed);
        backoff_s = 0.25;
      }
      bool recheck = false;
      {
        const std::lock_guard<std::mutex> lock(mutex);
        recheck = check_stream;
        check_stream = false;
      }
      if (natsConnection_Status(nc) != NATS_CONN_STATUS_CONNECTED) {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait_for(lock, std::chrono::milliseconds(50), [&] { return stopping; });
        continue;
      }
      if (recheck) {  // a publish found no stream: make sure of it and the bucket before the next
        settle_before_making_the_stream();
        ready = false;
        kvStore_Destroy(kv);
        kv = nullptr;
      }
      if (!ready) {
        std::string why;
        if (ensure_stream(why) != NATS_OK) {
          ready = false;
          set_state("no_stream", why);
          std::unique_lock<std::mutex> lock(mutex);
          wake.wait_for(lock, std::chrono::seconds(1), [&] { return stopping; });
          continue;
        }
        ready = true;
        set_state("connected");
      }
      // One window's worth a pass: the loop comes back to look at stopping and at the stream
      // even while the server answers every publish at once with a refusal (a leaf whose
      // JetStream is not up yet answers "no responders").
      const uint64_t failed_before = failed.load(std::memory_order_relaxed);
      for (uint32_t n = 0; n < settings.max_in_flight && in_flight.load(std::memory_order_relaxed) < settings.max_in_flight;
           ++n)
        if (!publish_one()) break;
      put_presence();
      std::unique_lock<std::mutex> lock(mutex);
      if (failed.load(std::memory_order_relaxed) != failed_before) {  // refusals: a pause before resending
        wake.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping; });
        continue;
      }
      wake.wait_for(lock, std::chrono::milliseconds(20), [&] {
        return stopping || check_stream ||
               ((!fresh.empty() || !again.empty()) && in_flight.load() < settings.max_in_flight);
      });
    }
  }

  uint64_t unsent() const {
    const std::lock_guard<std::mutex> lock(mutex);
    return fresh.size() + again.size();
  }
};

NatsSink::NatsSink(const FleetOutputSettings& settings, std::string run_id, SinkCounters& counters)
    : impl_(std::make_unique<Impl>(settings, std::move(run_id), counters)) {
  impl_->thread = std::thread([this] { impl_->run(); });
}

NatsSink::~NatsSink() {
  Impl& m = *impl_;
  // A connected output gets 2 s to deliver what is queued (the final status among it); one whose
  // broker is away does not hold a stop or a rebuild up. What is left is lost, and a reader sees
  // the gap in Vigil-Seq.
  bool connected = false;
  {
    const std::lock_guard<std::mutex> lock(m.mutex);
    connected = m.state == "connected";
  }
  if (connected) wait_acknowledged(2.0);
  {
    const std::lock_guard<std::mutex> lock(m.mutex);
    m.stopping = true;
    // What is still queued stays unsent: counted in the final status, said in the log.
    m.fresh.clear();
  }
  m.wake.notify_all();
  m.thread.join();
  if (m.js && connected) {
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 1000;
    js_PublishAsyncComplete(m.js, &po);
  }
  if (m.nc) {
    // The library calls back on its own thread (disconnected, then closed) after Close returns:
    // this object must outlive the last callback.
    natsConnection_Close(m.nc);
    std::unique_lock<std::mutex> lock(m.mutex);
    m.acked_cv.wait_for(lock, std::chrono::seconds(10), [&] { return m.closed; });
  }
  kvStore_Destroy(m.kv);
  jsCtx_Destroy(m.js);
  natsConnection_Destroy(m.nc);
  for (natsMsg* msg : m.again) natsMsg_Destroy(msg);
}

void NatsSink::send_event(std::string_view type, std::string_view text) noexcept {
  Impl& m = *impl_;
  try {
    const std::lock_guard<std::mutex> lock(m.mutex);
    m.note_presence(type, text);
    if (m.selected(type)) m.accept(type, text);
  } catch (...) {  // out of memory: the event is lost for this output, and counted
    m.dropped.fetch_add(1, std::memory_order_relaxed);
  }
  m.wake.notify_one();
}

void NatsSink::send_events(const EventBatch& batch) noexcept {
  Impl& m = *impl_;
  try {
    const std::lock_guard<std::mutex> lock(m.mutex);
    for (size_t i = 0; i < batch.types.size(); ++i)
      if (m.selected(batch.types[i]))
        m.accept(batch.types[i],
                 std::string_view(static_cast<const char*>(batch.texts.iov(i)->iov_base), batch.texts.bytes(i)));
  } catch (...) {
    m.dropped.fetch_add(1, std::memory_order_relaxed);
  }
  m.wake.notify_one();
}

void NatsSink::settle() noexcept {
  bool connected = false;
  {
    const std::lock_guard<std::mutex> lock(impl_->mutex);
    connected = impl_->state == "connected";
  }
  if (connected) wait_acknowledged(1.0);
}

bool NatsSink::status_due(int64_t now, bool final_report) noexcept {
  Impl& m = *impl_;
  const int64_t interval = int64_t(m.settings.status_interval_s * 1e9);
  if (m.next_status_mono_ns < 0) m.next_status_mono_ns = now + interval;
  if (!final_report && now < m.next_status_mono_ns) return false;
  m.next_status_mono_ns = now + interval;
  return true;
}

SinkStatus NatsSink::describe() const {
  const Impl& m = *impl_;
  SinkStatus s;
  s.kind = "nats";
  for (const std::string& u : m.settings.servers) s.destination += (s.destination.empty() ? "" : ",") + u;
  s.stream = m.settings.stream;
  const uint64_t in_flight = m.in_flight.load(std::memory_order_relaxed);
  s.counts = {{"accepted", m.accepted.load(std::memory_order_relaxed)},
              {"published", m.published.load(std::memory_order_relaxed)},
              {"acknowledged", m.acknowledged.load(std::memory_order_relaxed)},
              {"duplicates", m.duplicates.load(std::memory_order_relaxed)},
              {"resent", m.resent.load(std::memory_order_relaxed)},
              {"failed", m.failed.load(std::memory_order_relaxed)},
              {"pending", m.unsent() + in_flight},
              {"in_flight", in_flight},
              {"dropped", m.dropped.load(std::memory_order_relaxed)},
              {"connects", m.connects.load(std::memory_order_relaxed)},
              {"connect_failures", m.connect_failures.load(std::memory_order_relaxed)},
              {"disconnects", m.disconnects.load(std::memory_order_relaxed)},
              {"stream_replicas", m.replicas.load(std::memory_order_relaxed)}};
  const std::lock_guard<std::mutex> lock(m.mutex);
  s.facts = {{"rig", m.settings.rig}, {"run", m.run_id}, {"subject_prefix", m.settings.subject_prefix},
             {"state", m.state}, {"last_error", m.last_error}};
  return s;
}

RtLog* NatsSink::own_log() noexcept { return &impl_->log; }

bool NatsSink::wait_acknowledged(double timeout_s) const {
  const Impl& m = *impl_;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::unique_lock<std::mutex> lock(m.mutex);
  return m.acked_cv.wait_until(lock, until, [&] {
    return m.fresh.empty() && m.again.empty() && m.in_flight.load(std::memory_order_relaxed) == 0;
  });
}

}  // namespace vigil
