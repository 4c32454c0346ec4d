# Cross-compiling Vigil for aarch64 (Jetson's architecture) on a Debian or Ubuntu x86-64 machine with
# the arm64 libraries installed by multiarch (scripts/test-aarch64.sh installs them). Tests run
# under qemu-user: ctest puts CMAKE_CROSSCOMPILING_EMULATOR in front of every test, and the tests
# that start vigild, vigil-listen or vigil-dsp start them through it (tests/support/process.hpp).
# VIGIL_CROSS_CXX picks the compiler (default aarch64-linux-gnu-g++-11: JetPack 6's GCC 11);
# VIGIL_CROSS_EXTRA_PREFIX names a folder of arm64 files that multiarch cannot install beside the
# host's (Debian's libyaml-cpp-dev is not Multi-Arch: same).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

if(NOT DEFINED VIGIL_CROSS_CXX)
  set(VIGIL_CROSS_CXX aarch64-linux-gnu-g++-11)
endif()
string(REPLACE "g++" "gcc" VIGIL_CROSS_CC "${VIGIL_CROSS_CXX}")
set(CMAKE_CXX_COMPILER ${VIGIL_CROSS_CXX})
set(CMAKE_C_COMPILER ${VIGIL_CROSS_CC})

find_program(VIGIL_QEMU_AARCH64 qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${VIGIL_QEMU_AARCH64})

# Headers and libraries of the target: the multiarch folders (/usr/lib/aarch64-linux-gnu), the
# architecture-independent headers in /usr/include, and the extra prefix. Programs (npm, python3,
# tshark) are the host's.
if(DEFINED VIGIL_CROSS_EXTRA_PREFIX)
  list(APPEND CMAKE_PREFIX_PATH ${VIGIL_CROSS_EXTRA_PREFIX})
endif()
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

# pkg-config answers for the target's .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
