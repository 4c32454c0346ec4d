// FleetOrder: each rig's events once and in seq order, early ones held, gaps counted after the hold.
#include "wire/fleet_order.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace vigil {
namespace {

struct Collected {
  std::vector<std::pair<std::string, uint64_t>> seen;
  FleetOrder::Emit emit() {
    return [this](const std::string& rig, const std::string&, uint64_t seq, std::string_view text) {
      EXPECT_EQ(text, rig + ":" + std::to_string(seq));  // each text stays with its seq
      seen.emplace_back(rig, seq);
    };
  }
};

std::string text_of(const std::string& rig, uint64_t seq) { return rig + ":" + std::to_string(seq); }

TEST(FleetOrder, ShuffledAndRepeatedMessagesComeOutOnceInOrderPerRig) {
  std::mt19937 rng(std::random_device{}());
  std::vector<std::pair<std::string, uint64_t>> sent;
  for (uint64_t s = 0; s < 500; ++s) {
    sent.emplace_back("a", s);
    sent.emplace_back("b", s);
    if (rng() % 5 == 0) sent.emplace_back("a", s);  // a resend the stream did not drop
  }
  // Local disorder (a resend overtaken by newer messages), never more than 20 places.
  for (size_t i = 0; i + 20 < sent.size(); i += 7) std::shuffle(sent.begin() + long(i), sent.begin() + long(i) + 20, rng);
  // The first message of each rig first: a reader that starts a run starts at its first seq.
  std::stable_partition(sent.begin(), sent.end(), [](const auto& m) { return m.second == 0; });
  FleetOrder order(5);
  Collected c;
  for (const auto& [rig, seq] : sent) order.take(rig, "run1", seq, text_of(rig, seq), 0, c.emit());
  order.flush(c.emit());
  std::vector<uint64_t> a, b;
  for (const auto& [rig, seq] : c.seen) (rig == "a" ? a : b).push_back(seq);
  ASSERT_EQ(a.size(), 500u);
  ASSERT_EQ(b.size(), 500u);
  for (uint64_t s = 0; s < 500; ++s) {
    EXPECT_EQ(a[s], s);
    EXPECT_EQ(b[s], s);
  }
  EXPECT_EQ(order.rigs().at("a").duplicates, sent.size() - 1000);  // every resend, and nothing else
  EXPECT_EQ(order.rigs().at("b").duplicates, 0u);
  EXPECT_EQ(order.rigs().at("a").gaps, 0u);
  EXPECT_EQ(order.rigs().at("a").held, 0u);
}

TEST(FleetOrder, AMissingSeqIsAGapOnlyAfterTheHold) {
  FleetOrder order(1.0);
  Collected c;
  order.take("r", "x", 0, text_of("r", 0), 0, c.emit());
  order.take("r", "x", 3, text_of("r", 3), 100, c.emit());  // 1 and 2 not there yet
  order.take("r", "x", 4, text_of("r", 4), 200, c.emit());
  ASSERT_EQ(c.seen.size(), 1u);
  EXPECT_EQ(order.rigs().at("r").held, 2u);
  order.expire(999'999'999, c.emit());  // 1 s after the 3 came is at 1'000'000'100
  EXPECT_EQ(c.seen.size(), 1u);
  order.take("r", "x", 1, text_of("r", 1), 500'000'000, c.emit());  // came within the hold
  ASSERT_EQ(c.seen.size(), 2u);
  order.expire(1'000'000'100, c.emit());  // 2 never came: a gap of one, then 3 and 4
  ASSERT_EQ(c.seen.size(), 4u);
  EXPECT_EQ(c.seen[2].second, 3u);
  EXPECT_EQ(c.seen[3].second, 4u);
  EXPECT_EQ(order.rigs().at("r").gaps, 1u);
  EXPECT_EQ(order.rigs().at("r").missing, 1u);
  order.take("r", "x", 2, text_of("r", 2), 1'100'000'000, c.emit());  // too late: dropped, counted
  EXPECT_EQ(c.seen.size(), 4u);
  EXPECT_EQ(order.rigs().at("r").duplicates, 1u);
}

TEST(FleetOrder, ANewRunStartsItsOwnSequence) {
  FleetOrder order(1.0);
  Collected c;
  for (uint64_t s = 0; s < 3; ++s) order.take("r", "run1", s, text_of("r", s), 0, c.emit());
  for (uint64_t s = 0; s < 2; ++s) order.take("r", "run2", s, text_of("r", s), 0, c.emit());
  EXPECT_EQ(c.seen.size(), 5u);
  EXPECT_EQ(order.rigs().at("r").runs, 2u);
  EXPECT_EQ(order.rigs().at("r").duplicates, 0u);
  EXPECT_EQ(order.rigs().at("r").gaps, 0u);
}

TEST(FleetOrder, TooManyHeldDeclaresTheGapAtOnce) {
  FleetOrder order(1000.0, 3);
  Collected c;
  order.take("r", "x", 0, text_of("r", 0), 0, c.emit());
  for (uint64_t s = 5; s < 9; ++s) order.take("r", "x", s, text_of("r", s), 0, c.emit());
  EXPECT_EQ(c.seen.size(), 5u);  // 0, then 5..8 once the fourth was held
  EXPECT_EQ(order.rigs().at("r").missing, 4u);
}

TEST(FleetHeaders, RejectWhatIsNotARigRunAndSeq) {
  uint64_t seq = 0;
  std::string why;
  EXPECT_TRUE(parse_fleet_headers("rig-1", "0123abcd", "42", seq, why));
  EXPECT_EQ(seq, 42u);
  EXPECT_FALSE(parse_fleet_headers("", "0123", "1", seq, why));
  EXPECT_NE(why.find("Vigil-Rig"), std::string::npos);
  EXPECT_FALSE(parse_fleet_headers("r.1", "0123", "1", seq, why));
  EXPECT_FALSE(parse_fleet_headers("r", "", "1", seq, why));
  EXPECT_NE(why.find("Vigil-Run"), std::string::npos);
  EXPECT_FALSE(parse_fleet_headers("r", "a", "1x", seq, why));
  EXPECT_NE(why.find("Vigil-Seq"), std::string::npos);
  EXPECT_FALSE(parse_fleet_headers("r", "a", "-1", seq, why));
  EXPECT_FALSE(parse_fleet_headers("r", "a", "99999999999999999999999", seq, why));
}

}  // namespace
}  // namespace vigil
