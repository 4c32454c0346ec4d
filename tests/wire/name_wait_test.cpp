// Waiting for destination names at start: names answering "try again" are looked up again until
// they resolve or the time is up; a name that does not exist is not waited for.
#include "wire/name_wait.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace vigil {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TEST(NameWait, TheRealResolverAnswersForLocalNames) {
  std::string why;
  EXPECT_EQ(look_up_name("127.0.0.1", why), NameLookup::kResolved);
  EXPECT_EQ(look_up_name("::1", why), NameLookup::kResolved);
  EXPECT_EQ(look_up_name("localhost", why), NameLookup::kResolved);
}

TEST(NameWait, ANameThatAnswersTryAgainIsWaitedFor) {
  std::map<std::string, int> asked;
  std::vector<std::pair<std::string, std::string>> told;
  NameWait w;
  w.retry_s = 0.05;
  w.timeout_s = 10;
  // "late" answers "try again" twice (DNS not up yet), then resolves; "near" resolves at once and
  // is asked once, though it appears twice in the config.
  w.look_up = [&](const std::string& host, std::string& why) {
    const int n = ++asked[host];
    if (host == "late" && n <= 2) {
      why = "Temporary failure in name resolution";
      return NameLookup::kTryAgain;
    }
    return NameLookup::kResolved;
  };
  w.on_wait = [&](const std::string& host, const std::string& why, double) { told.emplace_back(host, why); };
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(wait_for_names({"near", "late", "near"}, w).empty());
  EXPECT_GE(seconds_since(t0), 0.1);  // two retries
  EXPECT_LT(seconds_since(t0), 5.0);
  EXPECT_EQ(asked["late"], 3);
  EXPECT_EQ(asked["near"], 1);
  ASSERT_EQ(told.size(), 2u);
  EXPECT_EQ(told[0], std::make_pair(std::string("late"), std::string("Temporary failure in name resolution")));
}

TEST(NameWait, ANameThatDoesNotExistIsNotWaitedFor) {
  int asked = 0;
  NameWait w;
  w.retry_s = 1;
  w.look_up = [&](const std::string&, std::string& why) {
    ++asked;
    why = "Name or service not known";
    return NameLookup::kNotFound;
  };
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(wait_for_names({"typo.example"}, w).empty());  // its output then fails with the reason
  EXPECT_LT(seconds_since(t0), 0.5);
  EXPECT_EQ(asked, 1);
}

TEST(NameWait, TheWaitEndsAtItsTimeoutWithTheNamesStillUnanswered) {
  NameWait w;
  w.retry_s = 0.05;
  w.timeout_s = 0.3;
  int waits = 0;
  w.look_up = [](const std::string& host, std::string&) {
    return host == "never" ? NameLookup::kTryAgain : NameLookup::kResolved;
  };
  w.on_wait = [&](const std::string&, const std::string&, double waited) {
    EXPECT_LE(waited, 0.3 + 0.05);
    ++waits;
  };
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(wait_for_names({"never", "127.0.0.1"}, w), std::vector<std::string>{"never"});
  EXPECT_GE(seconds_since(t0), 0.2);
  EXPECT_LT(seconds_since(t0), 3.0);
  EXPECT_GE(waits, 4);
}

// Items of different kinds in one wait (a name, an address of this machine, an interface): each
// asked its own way, told by its `what`, the ones that never come returned at the timeout.
TEST(NameWait, ItemsOfEveryKindAreWaitedForTogether) {
  std::map<std::string, int> asked;
  std::vector<std::string> told;
  auto item = [&](const std::string& what, int try_again_times, NameLookup then) {
    return Awaited{what, [&asked, what, try_again_times, then](std::string& why) {
                     if (++asked[what] <= try_again_times) {
                       why = "not yet";
                       return NameLookup::kTryAgain;
                     }
                     why = "gone";
                     return then;
                   }};
  };
  NameWait w;
  w.retry_s = 0.05;
  w.timeout_s = 0.6;
  w.on_wait = [&](const std::string& what, const std::string& why, double) {
    EXPECT_EQ(why, "not yet");
    told.push_back(what);
  };
  const std::vector<Awaited> items = {item("the name a", 2, NameLookup::kResolved),
                                      item("metrics.listen b", 1, NameLookup::kResolved),
                                      item("the interface c", 0, NameLookup::kNotFound),
                                      item("the interface d", 1000, NameLookup::kResolved)};
  EXPECT_EQ(wait_for(items, w), std::vector<std::string>{"the interface d"});
  EXPECT_EQ(asked["the name a"], 3);
  EXPECT_EQ(asked["metrics.listen b"], 2);
  EXPECT_EQ(asked["the interface c"], 1);  // not found: not waited for
  EXPECT_GE(asked["the interface d"], 5);
  EXPECT_EQ(std::count(told.begin(), told.end(), "the name a"), 2);
  EXPECT_EQ(std::count(told.begin(), told.end(), "metrics.listen b"), 1);
  EXPECT_EQ(std::count(told.begin(), told.end(), "the interface c"), 0);
  EXPECT_EQ(std::count(told.begin(), told.end(), "the interface d"), asked["the interface d"]);
}

}  // namespace
}  // namespace vigil
