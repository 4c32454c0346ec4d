#include "pipeline/prometheus.hpp"

#include <charconv>
#include <sstream>
#include <string_view>
#include <tuple>
#include <vector>

namespace vigil {
namespace {

class Writer {
 public:
  // One metric family: HELP and TYPE once, then its samples.
  void family(const std::string& name, const char* type, const char* help) {
    out_ << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  }
  void sample(const std::string& name, const std::string& labels, double v) {
    out_ << name;
    if (!labels.empty()) out_ << '{' << labels << '}';
    // Shortest text that reads back as the same double: a stream's default 6 digits made a
    // counter of 12 345 678 frames "1.23457e+07".
    char text[32];
    const auto end = std::to_chars(text, text + sizeof text, v).ptr;
    out_ << ' ' << std::string_view(text, size_t(end - text)) << '\n';
  }
  void counter(const nlohmann::json& s, const char* key, const std::string& name, const char* help) {
    if (!s.contains(key)) return;
    family(name, "counter", help);
    sample(name, "", s[key].get<double>());
  }
  void quantiles(const nlohmann::json& q, const std::string& name, const std::string& labels) {
    for (const auto& [key, label] : {std::pair{"p50", "0.5"}, {"p99", "0.99"}, {"p999", "0.999"}, {"max", "1"}})
      if (q.contains(key))
        sample(name, (labels.empty() ? "" : labels + ",") + "quantile=\"" + label + "\"", q[key].get<double>() * 1e-6);
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

std::string escape(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\' || c == '"') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

}  // namespace

std::string prometheus_text(const nlohmann::json& s) {
  Writer w;
  w.counter(s, "chunks_in", "vigil_chunks_in_total", "Chunks handed from capture to the pipeline.");
  w.counter(s, "frames_in", "vigil_frames_in_total", "Frames handed from capture to the pipeline.");
  w.counter(s, "dropped_frames", "vigil_dropped_frames_total", "Captured frames dropped: no free pool chunk.");
  w.counter(s, "output_dropped_frames", "vigil_output_dropped_frames_total",
            "Processed frames not sent: no free output slot.");
  w.counter(s, "read_errors", "vigil_read_errors_total", "Source read failures.");
  w.counter(s, "chunks_out", "vigil_chunks_out_total", "Chunks through the whole pipeline.");
  w.counter(s, "packets_sent", "vigil_packets_sent_total", "VITA 49 data packets sent.");
  w.counter(s, "bytes_sent", "vigil_bytes_sent_total", "Bytes sent (data, context and events).");
  w.counter(s, "send_errors", "vigil_send_errors_total", "Datagrams the kernel did not accept.");
  w.counter(s, "send_refused", "vigil_send_refused_total",
            "Sends refused because the destination answered port unreachable (no receiver).");
  w.counter(s, "send_buffer_full", "vigil_send_buffer_full_total", "Sends refused for a full socket buffer.");
  w.counter(s, "events_dropped", "vigil_events_dropped_total", "Detector events lost to a full queue.");
  w.counter(s, "clock_steps", "vigil_clock_steps_total", "Wall-clock steps the source's UTC time line followed.");
  w.counter(s, "deadline_misses", "vigil_deadline_misses_total", "Chunks finished after their deadline.");
  w.counter(s, "clipped_samples", "vigil_clipped_samples_total", "Input samples at full scale.");
  w.counter(s, "non_finite_samples", "vigil_non_finite_samples_total", "NaN/Inf input samples (replaced).");
  w.counter(s, "stage_failures", "vigil_stage_failures_total", "Stage process() calls that failed.");
  if (s.contains("uptime_s")) {
    w.family("vigil_uptime_seconds", "gauge", "Seconds since the pipeline started.");
    w.sample("vigil_uptime_seconds", "", s["uptime_s"].get<double>());
  }
  if (s.contains("source")) {
    w.family("vigil_source_running", "gauge", "1 while the source delivers, else 0.");
    w.sample("vigil_source_running", "kind=\"" + escape(s["source"].value("kind", "")) + "\"",
             s["source"].value("state", "") == "running" ? 1 : 0);
  }
  if (s.contains("latency_us")) {
    w.family("vigil_latency_seconds", "summary", "Per chunk: capture of its last frame to its last datagram sent.");
    w.quantiles(s["latency_us"], "vigil_latency_seconds", "");
  }
  if (s.contains("queues")) {
    w.family("vigil_queue_depth", "gauge", "Chunks waiting between threads.");
    for (const auto& [q, v] : s["queues"].items()) w.sample("vigil_queue_depth", "queue=\"" + escape(q) + "\"", v.get<double>());
  }
  if (s.contains("events_by_type")) {
    w.family("vigil_events_total", "counter", "Events sent, by type.");
    for (const auto& [t, v] : s["events_by_type"].items()) w.sample("vigil_events_total", "type=\"" + escape(t) + "\"", v.get<double>());
  }
  if (s.contains("deadline_misses_by")) {
    w.family("vigil_deadline_misses_by_total", "counter", "Deadline misses by culprit (capture queue, output, stage).");
    for (const auto& [c, v] : s["deadline_misses_by"].items())
      w.sample("vigil_deadline_misses_by_total", "culprit=\"" + escape(c) + "\"", v.get<double>());
    if (s.contains("stages"))
      for (const auto& [name, st] : s["stages"].items())
        if (st.contains("deadline_misses"))
          w.sample("vigil_deadline_misses_by_total", "culprit=\"stage:" + escape(name) + "\"", st["deadline_misses"].get<double>());
  }
  if (s.contains("stages")) {
    w.family("vigil_stage_seconds", "summary", "Per chunk: processing time of each stage.");
    for (const auto& [name, st] : s["stages"].items())
      if (st.contains("time_us")) w.quantiles(st["time_us"], "vigil_stage_seconds", "stage=\"" + escape(name) + "\"");
    bool gpu = false;
    for (const auto& [name, st] : s["stages"].items()) {
      if (!st.contains("gpu_us")) continue;
      if (!gpu) {
        w.family("vigil_stage_gpu_seconds", "summary", "Per chunk: GPU time of each CUDA stage (copies and kernels).");
        gpu = true;
      }
      w.quantiles(st["gpu_us"], "vigil_stage_gpu_seconds", "stage=\"" + escape(name) + "\"");
    }
    bool errors = false;
    for (const auto& [name, st] : s["stages"].items()) {
      if (!st.contains("cuda_errors")) continue;
      if (!errors) {
        w.family("vigil_cuda_errors_total", "counter", "CUDA errors per stage (each moves the stage to its CPU twin).");
        errors = true;
      }
      w.sample("vigil_cuda_errors_total", "stage=\"" + escape(name) + "\"", st["cuda_errors"].get<double>());
    }
    // Stages split over pipeline.gpus: each device's part (its first channel tells two parts on
    // one device apart); CPU parts have no device and are left out.
    struct DevicePart {
      std::string labels;
      const nlohmann::json* status;
    };
    std::vector<DevicePart> parts;
    for (const auto& [name, st] : s["stages"].items()) {
      if (!st.contains("devices")) continue;
      for (const nlohmann::json& p : st["devices"])
        if (p.contains("device"))
          parts.push_back({"stage=\"" + escape(name) + "\",device=\"" + std::to_string(p["device"].get<int>()) +
                               "\",first_channel=\"" + std::to_string(p.value("first_channel", 0)) + "\"",
                           &p});
    }
    if (!parts.empty())
      w.family("vigil_stage_device_gpu_seconds", "summary",
               "Per chunk: GPU time of each device's part of a CUDA stage split over pipeline.gpus.");
    for (const DevicePart& p : parts)
      if (p.status->contains("gpu_us")) w.quantiles((*p.status)["gpu_us"], "vigil_stage_device_gpu_seconds", p.labels);
    // A family of one value per part, where some part has it.
    auto per_part = [&](const char* key, const char* name, const char* type, const char* help) {
      bool any = false;
      for (const DevicePart& p : parts) {
        if (!p.status->contains(key)) continue;
        if (!any) w.family(name, type, help);
        any = true;
        w.sample(name, p.labels, (*p.status)[key].get<double>());
      }
    };
    per_part("device_memory_bytes", "vigil_stage_device_memory_bytes", "gauge",
             "GPU memory each device's part of a split stage took when it was prepared (its device's free memory "
             "before less after).");
    per_part("cuda_errors", "vigil_stage_device_cuda_errors_total", "counter",
             "CUDA errors of each device's part of a split stage (each moves that part to its CPU twin).");
  }
  if (s.contains("record")) {
    const nlohmann::json& rec = s["record"];
    w.counter(rec, "bytes_written", "vigil_record_bytes_total", "Bytes of raw input written to recordings.");
    w.counter(rec, "chunks_dropped", "vigil_record_dropped_chunks_total", "Chunks left out of the recording (the disk was behind).");
    w.counter(rec, "write_errors", "vigil_record_write_errors_total", "Recording write errors (each stops the recording).");
    w.family("vigil_recording", "gauge", "1 while recording, 0 once stopped.");
    w.sample("vigil_recording", "", rec.value("state", "") == "recording" ? 1.0 : 0.0);
  }
  if (s.contains("health")) {
    const nlohmann::json& h = s["health"];
    w.counter(h, "readings", "vigil_health_readings_total", "Readings of the SoC's temperatures and clocks.");
    w.counter(h, "read_errors", "vigil_health_read_errors_total", "Sensor files that could not be read or parsed.");
    w.counter(h, "alarms_raised", "vigil_health_alarms_raised_total", "Health alarms raised (temperature, throttling).");
    w.family("vigil_health_alarms_active", "gauge", "Health alarms raised and not cleared.");
    w.sample("vigil_health_alarms_active", "", h.value("alarms_active", 0.0));
    if (!h.value("zones", nlohmann::json::array()).empty())
      w.family("vigil_temperature_celsius", "gauge", "Temperature of each thermal zone.");
    for (const nlohmann::json& z : h.value("zones", nlohmann::json::array()))
      w.sample("vigil_temperature_celsius", "zone=\"" + escape(z.value("zone", "")) + "\"", z.value("temp_c", 0.0));
    const nlohmann::json clocks = h.value("clocks", nlohmann::json::array());
    for (const auto& [key, name, help] :
         {std::tuple{"cur_hz", "vigil_clock_hertz", "Each CPU policy's and devfreq device's clock now."},
          {"cap_hz", "vigil_clock_cap_hertz", "The highest each clock may run now (thermal or power limits lower it)."},
          {"max_hz", "vigil_clock_max_hertz", "The highest each clock's hardware has."}}) {
      if (clocks.empty()) break;
      w.family(name, "gauge", help);
      for (const nlohmann::json& c : clocks)
        w.sample(name, "clock=\"" + escape(c.value("clock", "")) + "\",kind=\"" + escape(c.value("kind", "")) + "\"",
                 c.value(key, 0.0));
    }
    if (!clocks.empty()) w.family("vigil_clock_throttled", "gauge", "1 while a clock is throttled.");
    for (const nlohmann::json& c : clocks)
      w.sample("vigil_clock_throttled", "clock=\"" + escape(c.value("clock", "")) + "\"", c.value("throttled", false) ? 1 : 0);
  }
  // Fleet outputs (kind: nats): what each published and what came back, and whether it is connected.
  std::vector<const nlohmann::json*> fleet;
  const nlohmann::json outputs = s.value("outputs", nlohmann::json::array());
  for (const nlohmann::json& o : outputs)
    if (o.value("kind", "") == "nats") fleet.push_back(&o);
  if (!fleet.empty()) {
    for (const auto& [key, name, help] :
         {std::tuple{"published", "vigil_fleet_published_total", "Events published to the fleet stream (resends included)."},
          {"acknowledged", "vigil_fleet_acknowledged_total", "Events the fleet stream acknowledged."},
          {"resent", "vigil_fleet_resent_total", "Events sent again for want of an acknowledgement."},
          {"dropped", "vigil_fleet_dropped_total", "Events dropped unsent: the queue was full (the oldest go)."},
          {"connect_failures", "vigil_fleet_connect_failures_total", "Failed attempts to connect to the broker."},
          {"pending", "vigil_fleet_pending", "Events not yet acknowledged (queued or in flight)."}}) {
      w.family(name, std::string(name).find("_total") != std::string::npos ? "counter" : "gauge", help);
      for (const nlohmann::json* o : fleet)
        w.sample(name, "rig=\"" + escape(o->value("rig", "")) + "\",stream=\"" + escape(o->value("stream", "")) + "\"",
                 o->value(key, 0.0));
    }
    w.family("vigil_fleet_connected", "gauge", "1 while connected to the broker with the stream in place.");
    for (const nlohmann::json* o : fleet)
      w.sample("vigil_fleet_connected", "rig=\"" + escape(o->value("rig", "")) + "\",stream=\"" + escape(o->value("stream", "")) + "\"",
               o->value("state", "") == "connected" ? 1 : 0);
  }
  return w.str();
}

}  // namespace vigil
