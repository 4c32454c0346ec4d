// Wireshark's `vrt` dissector must decode what vigild sends: encode data and context packets with
// our encoder, wrap them in a pcap (raw IPv4/UDP), and read the fields back with the real tshark.
// Built only where tshark is installed (CI installs it).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "wire/vita49.hpp"

namespace vigil::vita49 {
namespace {

namespace fs = std::filesystem;

void put_le32(std::ofstream& f, uint32_t v) { f.write(reinterpret_cast<const char*>(&v), 4); }

// One raw-IPv4 pcap record carrying a UDP datagram 127.0.0.1:40000 -> 127.0.0.1:port.
void write_record(std::ofstream& f, const std::vector<uint8_t>& payload, uint16_t port, uint32_t t_sec) {
  std::vector<uint8_t> ip(28 + payload.size(), 0);
  const size_t total = ip.size();
  ip[0] = 0x45;  // IPv4, 20-byte header
  ip[2] = uint8_t(total >> 8);
  ip[3] = uint8_t(total);
  ip[8] = 64;   // TTL
  ip[9] = 17;   // UDP
  const uint8_t lo[4] = {127, 0, 0, 1};
  std::copy(lo, lo + 4, &ip[12]);
  std::copy(lo, lo + 4, &ip[16]);
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += uint32_t(ip[size_t(i)] << 8 | ip[size_t(i) + 1]);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  ip[10] = uint8_t(~sum >> 8);
  ip[11] = uint8_t(~sum);
  const size_t udp_len = 8 + payload.size();
  ip[20] = 40000 >> 8;
  ip[21] = 40000 & 0xFF;
  ip[22] = uint8_t(port >> 8);
  ip[23] = uint8_t(port);
  ip[24] = uint8_t(udp_len >> 8);
  ip[25] = uint8_t(udp_len);  // checksum 0: none (allowed for IPv4)
  std::copy(payload.begin(), payload.end(), ip.begin() + 28);
  put_le32(f, t_sec);
  put_le32(f, 0);
  put_le32(f, uint32_t(ip.size()));
  put_le32(f, uint32_t(ip.size()));
  f.write(reinterpret_cast<const char*>(ip.data()), std::streamsize(ip.size()));
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

TEST(Vita49Tshark, WiresharkDecodesDataAndContextPackets) {
  // Built only when configure found tshark (tests/CMakeLists.txt).
  ASSERT_EQ(std::system("command -v tshark >/dev/null 2>&1"), 0) << "tshark was found at configure time but is not on PATH now";
  const fs::path dir = fs::temp_directory_path() / ("vigil-tshark-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path pcap = dir / "vrt.pcap";
  {
    std::ofstream f(pcap, std::ios::binary);
    put_le32(f, 0xa1b2c3d4);
    put_le32(f, 2 | 4u << 16);  // version 2.4
    put_le32(f, 0);
    put_le32(f, 0);
    put_le32(f, 65535);
    put_le32(f, 101);  // LINKTYPE_RAW: IPv4 without a link layer
    ContextPacket c;
    c.stream_id = 0x01002003;
    c.sample_rate_hz = 51200;
    c.ts_int = 1'795'290'081;
    std::vector<uint8_t> buf(kMaxDatagram);
    buf.resize(encode_context(c, buf.data(), buf.size()));
    write_record(f, buf, 4991, 1);
    std::vector<float> samples(360, 0.25f);
    for (int k = 0; k < 18; ++k) {  // wraps the 4-bit counter
      DataPacket p;
      p.stream_id = 0x01002003;
      p.packet_count = uint8_t(k & 0xF);
      p.ts_int = 1'795'290'081;
      p.ts_frac_ps = uint64_t(k) * 360 * 19'531'250;
      p.sample_loss = k == 3;
      buf.assign(kMaxDatagram, 0);
      buf.resize(encode_data(p, samples.data(), samples.size(), buf.data(), buf.size()));
      write_record(f, buf, 4991, 1);
    }
  }
  const std::string out = run("tshark -r " + pcap.string() +
                              " -d udp.port==4991,vrt -T fields -E separator=, -e vrt.type -e vrt.sid -e vrt.seq "
                              "-e vrt.ts_int -e vrt.ts_frac_picosecond -e vrt.sampleloss -e _ws.malformed 2>/dev/null");
  fs::remove_all(dir);
  std::istringstream lines(out);
  std::string line;
  std::vector<std::string> rows;
  while (std::getline(lines, line))
    if (!line.empty()) rows.push_back(line);
  ASSERT_EQ(rows.size(), 19u) << out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string& r = rows[i];
    EXPECT_NE(r.find("0x01002003"), std::string::npos) << "row " << i << ": " << r;
    EXPECT_NE(r.find("1795290081"), std::string::npos) << "row " << i << ": " << r;
    EXPECT_EQ(r.back(), ',') << "malformed flag set in row " << i << ": " << r;  // _ws.malformed empty
    if (i == 0) continue;
    const int k = int(i) - 1;
    std::istringstream fields(r);
    std::string type, sid, seq, ts_int, ts_frac, loss;
    std::getline(fields, type, ',');
    std::getline(fields, sid, ',');
    std::getline(fields, seq, ',');
    std::getline(fields, ts_int, ',');
    std::getline(fields, ts_frac, ',');
    std::getline(fields, loss, ',');
    EXPECT_EQ(std::stoi(seq), k % 16) << r;
    EXPECT_EQ(std::stoull(ts_frac), uint64_t(k) * 360 * 19'531'250) << r;
    EXPECT_EQ(loss == "1" || loss == "True", k == 3) << r;
  }
}

}  // namespace
}  // namespace vigil::vita49
