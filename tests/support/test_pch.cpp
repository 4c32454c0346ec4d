// Compiles tests/support/test_pch.hpp into the tests' precompiled header (tests/CMakeLists.txt
// gives it to this file as to every test program): nothing of its own.
