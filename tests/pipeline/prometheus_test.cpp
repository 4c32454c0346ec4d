// The Prometheus text exposition of a status report: values exact, families declared once.
#include "pipeline/prometheus.hpp"

#include <gtest/gtest.h>

namespace vigil {
namespace {

// A stream's default 6 significant digits printed 12345678 as 1.23457e+07: a counter that
// Prometheus then saw stand still for up to 100 increments.
TEST(Prometheus, CountersAreWrittenExactly) {
  const std::string text = prometheus_text({{"frames_in", 12345678901ull}, {"chunks_in", 7}});
  EXPECT_NE(text.find("\nvigil_frames_in_total 12345678901\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nvigil_chunks_in_total 7\n"), std::string::npos) << text;
}

TEST(Prometheus, HealthReadingsBecomeGaugesPerZoneAndClock) {
  const nlohmann::json status = {
      {"health",
       {{"readings", 3}, {"read_errors", 1}, {"alarms_raised", 2}, {"alarms_active", 1},
        {"zones", {{{"zone", "GPU-therm"}, {"temp_c", 91.5}}}},
        {"clocks", {{{"clock", "cpufreq/policy0"}, {"kind", "cpu"}, {"cur_hz", 1497600000}, {"cap_hz", 1497600000},
                     {"max_hz", 2201600000}, {"throttled", true}}}}}}};
  const std::string text = prometheus_text(status);
  for (const char* line :
       {"vigil_health_readings_total 3\n", "vigil_health_read_errors_total 1\n", "vigil_health_alarms_active 1\n",
        "vigil_temperature_celsius{zone=\"GPU-therm\"} 91.5\n",
        "vigil_clock_hertz{clock=\"cpufreq/policy0\",kind=\"cpu\"} 1497600000\n",
        "vigil_clock_max_hertz{clock=\"cpufreq/policy0\",kind=\"cpu\"} 2201600000\n",
        "vigil_clock_throttled{clock=\"cpufreq/policy0\"} 1\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in\n" << text;
  EXPECT_EQ(text.find("# TYPE vigil_clock_hertz"), text.rfind("# TYPE vigil_clock_hertz"));
}

TEST(Prometheus, AFleetOutputsCountsAndStateBecomeMetricsPerRig) {
  const nlohmann::json status = {
      {"outputs",
       {{{"kind", "events"}, {"destination", "127.0.0.1:4992"}},
        {{"kind", "nats"}, {"rig", "press7"}, {"stream", "VIGIL"}, {"published", 1002}, {"acknowledged", 1000},
         {"resent", 2}, {"dropped", 5}, {"connect_failures", 3}, {"pending", 7}, {"state", "connected"}},
        {{"kind", "nats"}, {"rig", "press7"}, {"stream", "B"}, {"state", "refused"}}}}};
  const std::string text = prometheus_text(status);
  for (const char* line :
       {"vigil_fleet_published_total{rig=\"press7\",stream=\"VIGIL\"} 1002\n",
        "vigil_fleet_acknowledged_total{rig=\"press7\",stream=\"VIGIL\"} 1000\n",
        "vigil_fleet_resent_total{rig=\"press7\",stream=\"VIGIL\"} 2\n",
        "vigil_fleet_dropped_total{rig=\"press7\",stream=\"VIGIL\"} 5\n",
        "vigil_fleet_connect_failures_total{rig=\"press7\",stream=\"VIGIL\"} 3\n",
        "vigil_fleet_pending{rig=\"press7\",stream=\"VIGIL\"} 7\n",
        "vigil_fleet_connected{rig=\"press7\",stream=\"VIGIL\"} 1\n",
        "vigil_fleet_connected{rig=\"press7\",stream=\"B\"} 0\n", "# TYPE vigil_fleet_pending gauge\n",
        "# TYPE vigil_fleet_resent_total counter\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in\n" << text;
}

// A stage split over pipeline.gpus: its parts' GPU time, CUDA errors and memory per device (and
// first channel: two parts on one device); CPU parts (no device) are left out.
TEST(Prometheus, AStageSplitOverDevicesGivesEachDevicesPart) {
  const nlohmann::json status = {
      {"stages",
       {{"band",
         {{"cuda_errors", 1},
          {"gpu_us", {{"p50", 100}, {"p99", 300}, {"max", 400}}},
          {"devices",
           {{{"device", 0}, {"first_channel", 0}, {"channels", 512}, {"cuda_errors", 0},
             {"device_memory_bytes", 301989888}, {"device_memory_total_bytes", 85045231616},
             {"gpu_us", {{"p50", 90}, {"p99", 250}, {"max", 300}}}},
            {{"device", 1}, {"first_channel", 512}, {"channels", 512}, {"cuda_errors", 1},
             {"gpu_us", {{"p50", 100}, {"p99", 300}, {"max", 400}}}}}}}},
        {"cpu", {{"devices", {{{"first_channel", 0}, {"channels", 2}}, {{"first_channel", 2}, {"channels", 2}}}}}}}}};
  const std::string text = prometheus_text(status);
  for (const char* line :
       {"vigil_stage_device_gpu_seconds{stage=\"band\",device=\"1\",first_channel=\"512\",quantile=\"0.99\"} 3e-04\n",
        "vigil_stage_device_gpu_seconds{stage=\"band\",device=\"0\",first_channel=\"0\",quantile=\"0.99\"} 0.00025\n",
        "vigil_stage_device_cuda_errors_total{stage=\"band\",device=\"1\",first_channel=\"512\"} 1\n",
        "vigil_stage_device_cuda_errors_total{stage=\"band\",device=\"0\",first_channel=\"0\"} 0\n",
        "vigil_stage_device_memory_bytes{stage=\"band\",device=\"0\",first_channel=\"0\"} 301989888\n",
        "vigil_cuda_errors_total{stage=\"band\"} 1\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in\n" << text;
  EXPECT_EQ(text.find("stage=\"cpu\",device"), std::string::npos) << text;
  // Device 1's part says nothing of its memory: no sample is made up for it.
  EXPECT_EQ(text.find("vigil_stage_device_memory_bytes{stage=\"band\",device=\"1\""), std::string::npos) << text;
  EXPECT_EQ(text.find("# TYPE vigil_stage_device_gpu_seconds"), text.rfind("# TYPE vigil_stage_device_gpu_seconds"));
}

}  // namespace
}  // namespace vigil
