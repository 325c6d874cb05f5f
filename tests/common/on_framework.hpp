#pragma once
// A test parameterised by framework name ("native", "opencl"): opens the
// backend, or skips saying "[  SKIPPED ] name: reason", which CTest's
// SKIP_REGULAR_EXPRESSION turns into a skipped test.
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "xylem/xylem.hpp"

namespace xylem_test {

class OnFramework : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    try {
      be = xylem::Backend::open(GetParam());
    } catch (const xylem::Error& e) {
      std::cout << "[  SKIPPED ] " << GetParam() << ": " << e.message() << std::endl;
      GTEST_SKIP() << GetParam() << ": " << e.message();
    }
  }
  xylem::Backend be = xylem::Backend::native();
};

}  // namespace xylem_test
