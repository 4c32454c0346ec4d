// The real vigil-dsp binary on files, against the SciPy/PyWavelets references; and its rejections.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../support/reference_data.hpp"

namespace vigil {
namespace {

namespace fs = std::filesystem;
const std::string kDsp = std::string(VIGIL_BIN_DIR) + "/vigil-dsp";

class VigilDsp : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vigil-dsp-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    // The reference files are raw float64 with a .bin name; vigil-dsp reads .f64.
    for (const char* f : {"input_x", "fir63_h", "psd_x", "wavelet_x", "db8_wavedec_coeffs"})
      fs::copy_file(std::string(VIGIL_TEST_DATA) + "/" + f + ".bin", dir_ / (std::string(f) + ".f64"),
                    fs::copy_options::overwrite_existing);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs vigil-dsp with args; returns the exit code and fills err with its stderr.
  int run(const std::string& args, std::string* err = nullptr) {
    const std::string errfile = (dir_ / "stderr.txt").string();
    const int st = std::system((kDsp + " " + args + " 2>" + errfile).c_str());
    if (err) {
      std::ifstream f(errfile);
      err->assign(std::istreambuf_iterator<char>(f), {});
    }
    return WEXITSTATUS(st);
  }
  std::string p(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<double> read(const std::string& name) const {
    std::ifstream in(dir_ / name, std::ios::binary | std::ios::ate);
    std::vector<double> v(size_t(in.tellg()) / 8);
    in.seekg(0);
    in.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * 8));
    return v;
  }
  static void expect_close(const std::vector<double>& got, const std::vector<double>& ref, double rel,
                           const std::string& what) {
    ASSERT_EQ(got.size(), ref.size()) << what;
    double m = 0;
    for (double v : ref) m = std::max(m, std::fabs(v));
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(got[i], ref[i], rel * std::max(1.0, m)) << what << " " << i;
  }
  fs::path dir_;
};

TEST_F(VigilDsp, EveryOperationMatchesItsReference) {
  ASSERT_EQ(run("firdesign --type lowpass --taps 63 --cutoff 0.2 --rate 2 --out " + p("h.f64")), 0);
  expect_close(read("h.f64"), test::read_f64("fir63_h.bin"), 1e-6, "firdesign");

  ASSERT_EQ(run("fir --taps " + p("fir63_h.f64") + " --in " + p("input_x.f64") + " --out " + p("y.f64")), 0);
  expect_close(read("y.f64"), test::read_f64("fir63_lfilter_y.bin"), 1e-5, "fir");

  ASSERT_EQ(run("conv --kernel " + p("fir63_h.f64") + " --in " + p("input_x.f64") + " --out " + p("c.f64")), 0);
  const auto conv = read("c.f64");
  ASSERT_EQ(conv.size(), 4096u + 63 - 1);  // N + M - 1
  expect_close(std::vector<double>(conv.begin(), conv.begin() + 4096), test::read_f64("fir63_lfilter_y.bin"), 1e-5,
               "conv head");

  ASSERT_EQ(run("dwt --wavelet db8 --levels 8 --in " + p("input_x.f64") + " --out " + p("w.f64")), 0);
  expect_close(read("w.f64"), test::read_f64("db8_wavedec_coeffs.bin"), 1e-5, "dwt");
  ASSERT_EQ(run("idwt --wavelet db8 --levels 8 --in " + p("w.f64") + " --out " + p("r.f64")), 0);
  expect_close(read("r.f64"), test::read_f64("input_x.bin"), 1e-5, "idwt");

  ASSERT_EQ(run("denoise --wavelet db8 --in " + p("input_x.f64") + " --out " + p("d.f64")), 0);
  expect_close(read("d.f64"), test::read_f64("db8_visushrink_y.bin"), 1e-5, "denoise");
  ASSERT_EQ(run("denoise --wavelet sym5 --levels 6 --mode hard --noise per-level --in " + p("wavelet_x.f64") +
                " --out " + p("d2.f64")),
            0);
  expect_close(read("d2.f64"), test::read_f64("denoise_sym5_6_hard_perlevel.bin"), 1e-5, "denoise hard per-level");

  ASSERT_EQ(run("psd --rate 1000 --nperseg 256 --in " + p("psd_x.f64") + " --out " + p("s.f64")), 0);
  expect_close(read("s.f64"), test::read_f64("welch_hann_256.bin"), 1e-5, "psd");
}

// psd takes a Kaiser window's shape as firdesign does: beta 0 is the rectangular window (I0(0) / I0(0)
// at every sample), and another beta gives another estimate.
TEST_F(VigilDsp, PsdTakesTheKaiserShape) {
  const std::string psd = "psd --rate 1000 --nperseg 256 --in " + p("psd_x.f64") + " --out ";
  ASSERT_EQ(run(psd + p("rect.f64") + " --window rectangular"), 0);
  ASSERT_EQ(run(psd + p("k0.f64") + " --window kaiser --beta 0"), 0);
  ASSERT_EQ(run(psd + p("k14.f64") + " --window kaiser --beta 14"), 0);
  ASSERT_EQ(run(psd + p("kdefault.f64") + " --window kaiser"), 0);
  ASSERT_EQ(run(psd + p("k120db.f64") + " --window kaiser --atten 120"), 0);
  expect_close(read("k0.f64"), read("rect.f64"), 1e-12, "kaiser beta 0 against rectangular");
  const auto differ = [&](const char* a, const char* b) {
    const std::vector<double> x = read(a), y = read(b);
    double d = 0;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) d = std::max(d, std::fabs(x[i] - y[i]) / std::fabs(x[i]));
    return x.size() == y.size() && d > 1e-3;
  };
  EXPECT_TRUE(differ("k14.f64", "kdefault.f64")) << "--beta 14 gave the default beta's estimate";
  EXPECT_TRUE(differ("k120db.f64", "kdefault.f64")) << "--atten 120 gave the default beta's estimate";
}

TEST_F(VigilDsp, HelpAfterAnOperationShowsTheUsage) {
  const std::string out = p("help.txt");
  EXPECT_EQ(std::system((kDsp + " psd --help > " + out).c_str()), 0);
  std::ifstream f(out);
  const std::string text(std::istreambuf_iterator<char>(f), {});
  EXPECT_NE(text.find("usage: vigil-dsp OP"), std::string::npos) << text;
  EXPECT_NE(text.find("kaiser [--beta B | --atten DB]"), std::string::npos) << text;
}

TEST_F(VigilDsp, CudaBackendMatchesOrSaysWhyNot) {
  std::string err;
  struct Case {
    std::string args, out, reference;
  };
  for (const Case& c : {Case{"fir --backend cuda --taps " + p("fir63_h.f64") + " --in " + p("input_x.f64"), "yg.f64",
                             "fir63_lfilter_y.bin"},
                        Case{"psd --backend cuda --rate 1000 --nperseg 256 --in " + p("psd_x.f64"), "sg.f64",
                             "welch_hann_256.bin"},
                        Case{"dwt --backend cuda --wavelet db8 --levels 8 --in " + p("input_x.f64"), "wg.f64",
                             "db8_wavedec_coeffs.bin"},
                        Case{"idwt --backend cuda --wavelet db8 --levels 8 --in " + p("db8_wavedec_coeffs.f64"), "rg.f64",
                             "input_x.bin"},
                        Case{"denoise --backend cuda --wavelet db8 --in " + p("input_x.f64"), "dg.f64",
                             "db8_visushrink_y.bin"},
                        Case{"denoise --backend cuda --wavelet sym5 --levels 6 --mode hard --noise per-level --in " +
                                 p("wavelet_x.f64"),
                             "dg2.f64", "denoise_sym5_6_hard_perlevel.bin"}}) {
    const int rc = run(c.args + " --out " + p(c.out), &err);
    if (rc == 0) {  // a GPU is here: the same answer as SciPy
      expect_close(read(c.out), test::read_f64(c.reference), 1e-5, c.args);
    } else if (rc == 1) {  // built with CUDA, no device (CI): a clear reason
      EXPECT_TRUE(VIGIL_HAVE_CUDA);
      EXPECT_NE(err.find("no usable CUDA device"), std::string::npos) << err;
    } else {
      EXPECT_EQ(rc, 2);
      EXPECT_FALSE(VIGIL_HAVE_CUDA);
      EXPECT_NE(err.find("no CUDA backend"), std::string::npos) << err;
    }
  }

}

TEST_F(VigilDsp, ReadsAWavChannel) {
  // 16-bit stereo WAV: channel 1 carries k/32768 for k = 0..999, channel 0 carries zeros.
  {
    std::ofstream f(p("in.wav"), std::ios::binary);
    auto u32 = [&](uint32_t v) { f.write(reinterpret_cast<const char*>(&v), 4); };
    auto u16 = [&](uint16_t v) { f.write(reinterpret_cast<const char*>(&v), 2); };
    f.write("RIFF", 4);
    u32(36 + 4000);
    f.write("WAVEfmt ", 8);
    u32(16);
    u16(1);
    u16(2);
    u32(8000);
    u32(8000 * 4);
    u16(4);
    u16(16);
    f.write("data", 4);
    u32(4000);
    for (int k = 0; k < 1000; ++k) {
      u16(0);
      u16(uint16_t(int16_t(k)));
    }
  }
  ASSERT_EQ(run("fir --taps " + p("one.f64") + " --in " + p("in.wav") + " --channel 1 --out " + p("o.f64")), 1)
      << "missing taps file is a runtime failure";
  {
    std::ofstream f(p("one.f64"), std::ios::binary);
    const double one = 1.0;
    f.write(reinterpret_cast<const char*>(&one), 8);
  }
  ASSERT_EQ(run("fir --taps " + p("one.f64") + " --in " + p("in.wav") + " --channel 1 --out " + p("o.f64")), 0);
  const auto y = read("o.f64");
  ASSERT_EQ(y.size(), 1000u);
  for (int k = 0; k < 1000; ++k) ASSERT_DOUBLE_EQ(y[size_t(k)], k / 32768.0) << k;
  std::string err;
  EXPECT_EQ(run("fir --taps " + p("one.f64") + " --in " + p("in.wav") + " --channel 2 --out " + p("o.f64"), &err), 1);
  EXPECT_NE(err.find("the file has 2 channel(s)"), std::string::npos) << err;
}

TEST_F(VigilDsp, BadArgumentsNameTheOptionAndExit2) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "usage"},
      {"bogus --in x.f32 --out y.f32", "unknown operation 'bogus'"},
      {"firdesign --type lowpass --taps 0 --cutoff 1000 --rate 48000 --out " + p("h.f32"), "--taps must be a number in 1..65536"},
      {"firdesign --type highpass --taps 32 --cutoff 1000 --rate 48000 --out " + p("h.f32"), "odd number of taps"},
      {"firdesign --type bandpass --taps 31 --cutoff 1000 --rate 48000 --out " + p("h.f32"), "--cutoff takes two frequencies"},
      {"firdesign --type lowpass --taps 31 --cutoff 30000 --rate 48000 --out " + p("h.f32"), "f1_hz must be in (0, 24000)"},
      {"firdesign --type lowpass --taps 31 --cutoff 1000 --rate 48000 --window hann --beta 3 --out " + p("h.f32"),
       "--beta and --atten apply to --window kaiser only"},
      {"dwt --wavelet db99 --levels 2 --in " + p("input_x.f64") + " --out " + p("o.f32"), "--wavelet must be"},
      {"dwt --wavelet db8 --in " + p("input_x.f64") + " --out " + p("o.f32"), "--levels J is required"},
      {"dwt --wavelet db8 --levels 99 --in " + p("input_x.f64") + " --out " + p("o.f32"), "--levels must be a number in 1..28"},
      {"denoise --wavelet db8 --mode medium --in " + p("input_x.f64") + " --out " + p("o.f32"), "--mode must be soft or hard"},
      {"psd --rate 1000 --nperseg 255 --in " + p("psd_x.f64") + " --out " + p("o.f32"), "--nperseg must be even"},
      {"psd --rate 0 --nperseg 256 --in " + p("psd_x.f64") + " --out " + p("o.f32"), "--rate must be a number above 0"},
      // 10 000 samples = 16 x 625: the periodized transform takes 4 levels at most.
      {"dwt --wavelet db8 --levels 6 --in " + p("psd_x.f64") + " --out " + p("o.f32"),
       "must be divisible by 2^levels = 64 (at most 4 levels at this length"},
      {"psd --rate 1000 --nperseg 256 --in " + p("psd_x.f64") + " --out " + p("o.txt"), "--out must name a .f32 or .f64"},
      {"fir --taps h.bin --in " + p("input_x.f64") + " --out " + p("o.f32"), "--taps must name a .f32, .f64 or .wav"},
      {"dwt --wavelet db8 --levels 2 --taps 3 --in " + p("input_x.f64") + " --out " + p("o.f32"), "--taps does not apply to dwt"},
      {"fir --taps " + p("fir63_h.f64") + " --in " + p("input_x.f64") + " --out " + p("o.f32") + " --backend gpu",
       "--backend must be cpu, cuda or auto"},
  };
  for (const auto& [args, fragment] : cases) {
    std::string err;
    EXPECT_EQ(run(args, &err), 2) << args;
    if (args.empty()) continue;  // usage goes to stdout
    EXPECT_NE(err.find(fragment), std::string::npos) << args << "\n" << err;
    if (fragment.rfind("unknown operation", 0) == 0) continue;  // followed by the usage text
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1)
        << "one line: " << err;
  }
}

// Input files it cannot use: exit 1 (2 is for arguments), one line naming the file and why.
TEST_F(VigilDsp, UnusableInputFilesNameTheFileAndExit1) {
  fs::create_directory(p("dir.f64"));
  std::ofstream(p("odd.f32"), std::ios::binary) << "abcde";
  std::ofstream(p("empty.f32"), std::ios::binary).flush();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {p("none.f64"), ": cannot open: No such file or directory"},
      {p("dir.f64"), ": cannot open: is a directory, not a file"},
      {p("odd.f32"), ": 5 bytes is not a whole number of 4-byte samples"},
      {p("empty.f32"), ": the file holds no samples"},
  };
  for (const auto& [in, why] : cases) {
    std::string err;
    EXPECT_EQ(run("fir --taps " + p("fir63_h.f64") + " --in " + in + " --out " + p("o.f32"), &err), 1) << in;
    EXPECT_EQ(err, "vigil-dsp fir: " + in + why + "\n");
  }
  // The same for the taps, and for every operation's input (the DWT said "length must be 2..", psd
  // "--nperseg 4 is longer than the input (0 samples)").
  for (const std::string& args :
       {"fir --taps " + p("empty.f32") + " --in " + p("input_x.f64"), "dwt --wavelet db8 --levels 2 --in " + p("empty.f32"),
        "denoise --wavelet db8 --in " + p("empty.f32"), "psd --rate 100 --nperseg 4 --in " + p("empty.f32")}) {
    std::string err;
    EXPECT_EQ(run(args + " --out " + p("o.f32"), &err), 1) << args;
    EXPECT_EQ(err.substr(err.find(':') + 2), p("empty.f32") + ": the file holds no samples\n") << args;
  }
}

}  // namespace
}  // namespace vigil
