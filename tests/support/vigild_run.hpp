// One run of the real vigild under test: a receiver thread on two loopback sockets (data and
// events), vigild started on a config with its stderr (the journal) captured to a file, and a
// stop that signals, waits and joins. Shared by the integration tests of faults and overload.
#pragma once

#include <signal.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "process.hpp"
#include "udp_receiver.hpp"

namespace vigil::test {

// pipeline keys for a paced run that must lose nothing: half a second of chunks (512 of 1 ms at
// 10x) may wait for the pipeline and for the output. These runs check that every sample arrives,
// not the deadlines, and a 2-core CI machine running other tests beside them stalls vigild's
// threads for tens of milliseconds at times (90 ms once under ASan; the default 64-chunk pool
// then overflows and the capture counts drops).
inline constexpr const char* kRoomForStalls = "pool_chunks: 512, output_slots: 512";
// The same as a config's pipeline block.
inline std::string room_for_stalls() { return std::string("pipeline: {") + kRoomForStalls + "}\n"; }

class VigildRun {
 public:
  VigildRun(UdpSocket& data, UdpSocket& events, const std::string& config, const std::string& log_path,
            bool keep_timestamps = true, bool keep_samples = false)
      : log_path_(log_path) {
    received.keep_timestamps = keep_timestamps;
    received.keep_samples = keep_samples;
    rx_ = std::thread([this, &data, &events] { receive(data, events, received, stop_rx_); });
    vigild_ = std::make_unique<Process>(std::vector<std::string>{
        "/bin/sh", "-c", "exec " + std::string(VIGIL_BIN_DIR) + "/vigild --config " + config + " --log-interval 0 2>" + log_path});
  }
  ~VigildRun() { finish(SIGKILL); }

  // Waits for the start event, then `ms` more.
  void run_for(int ms) {
    wait_for_start(received);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
  void signal(int sig) { vigild_->signal(sig); }
  int pid() const { return vigild_->pid(); }
  // Sends `sig`, waits up to 10 s for the exit, then drains the sockets (200 ms quiet) and joins
  // the receiver. Returns the raw wait status (-1: still running after 10 s, then killed).
  int finish(int sig = SIGTERM) {
    if (done_) return status_;
    done_ = true;
    vigild_->signal(sig);
    status_ = vigild_->wait(std::chrono::seconds(10));
    stop_rx_ = true;
    rx_.join();
    log = read_text(log_path_);
    return status_;
  }
  // Waits for vigild to exit by itself (a source that ends), then drains and joins.
  int wait_exit(std::chrono::seconds limit) {
    if (done_) return status_;
    done_ = true;
    status_ = vigild_->wait(limit);
    stop_rx_ = true;
    rx_.join();
    log = read_text(log_path_);
    return status_;
  }

  Received received;
  std::string log;  // vigild's stderr, read by finish()

 private:
  std::string log_path_;
  std::atomic<bool> stop_rx_{false};
  std::thread rx_;
  std::unique_ptr<Process> vigild_;
  bool done_ = false;
  int status_ = -1;
};

}  // namespace vigil::test
