// What nearly every test file parses: compiled once per build (tests/CMakeLists.txt) and given
// to every test program, so that gtest.h and json.hpp are not parsed again in each of them.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>
