// vigil-dsp: Vigil's DSP on files. vigil-dsp OP [options] --in FILE --out FILE [--backend cpu|cuda|auto]
// Files: raw little-endian .f32 / .f64, or .wav in (first channel, or --channel N).
#include <cmath>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "acquisition/sample_file.hpp"
#include "apps/ae_locate_command.hpp"
#include "apps/cli_args.hpp"
#include "dsp/convolution.hpp"
#include "dsp/dwt.hpp"
#include "dsp/fir_design.hpp"
#include "dsp/wavelet_denoiser.hpp"
#include "dsp/welch_psd.hpp"
#if VIGIL_HAVE_CUDA
#include "cuda/convolve_cuda.hpp"
#include "cuda/spectrum_cuda.hpp"
#include "cuda/wavelet_denoiser_cuda.hpp"
#endif

namespace {

using vigil::CliArgs;

constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2;

struct Usage : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

const std::map<std::string, std::set<std::string>> kOps = {
    {"firdesign", {"type", "taps", "cutoff", "rate", "window", "beta", "atten", "out"}},
    {"fir", {"taps", "in", "out", "channel", "backend"}},
    {"conv", {"kernel", "in", "out", "channel", "backend"}},
    {"dwt", {"wavelet", "levels", "in", "out", "channel", "backend"}},
    {"idwt", {"wavelet", "levels", "in", "out", "channel", "backend"}},
    {"denoise", {"wavelet", "levels", "mode", "noise", "in", "out", "channel", "backend"}},
    {"psd", {"rate", "nperseg", "window", "beta", "atten", "in", "out", "channel", "backend"}},
    {"aelocate", {"geometry", "hits", "rate"}},
};

const char* kUsage =
    "usage: vigil-dsp OP [options] --in FILE --out FILE [--backend cpu|cuda|auto]\n"
    "  firdesign --type lowpass|highpass|bandpass|bandstop --taps N --cutoff F1[,F2] --rate R\n"
    "            [--window W] --out H.f32\n"
    "  fir      --taps H.f32                 (output length = input length, as scipy lfilter(h, 1, x))\n"
    "  conv     --kernel H.f32               (full, N+M-1 outputs, as numpy.convolve)\n"
    "  dwt      --wavelet NAME --levels J    (pywt.wavedec order, mode periodization)\n"
    "  idwt     --wavelet NAME --levels J\n"
    "  denoise  --wavelet NAME [--levels J] [--mode soft|hard] [--noise finest|per-level]\n"
    "  psd      --rate R --nperseg N [--window W]  (one-sided Welch PSD, as scipy.signal.welch; W default hann)\n"
    "  aelocate --geometry G.yaml --hits HITS.jsonl [--rate R]\n"
    "           (AE events located from hits, as vigil-listen --json writes them; JSON lines to stdout)\n"
    "Windows W: hamming (firdesign's default), hann, blackman, rectangular, kaiser [--beta B | --atten DB]\n"
    "           (kaiser's default beta 8.6).\n"
    "Files: .f32/.f64 raw little-endian, .wav input (first channel, or --channel N).\n"
    "Exit status: 0 done, 1 an input it cannot read or use (the file named), 2 bad arguments.\n";

// A file with no samples is an input it cannot use, like an unreadable one: exit 1, the file named.
std::vector<double> read_samples(const std::string& path, uint32_t channel = 0) {
  std::vector<double> v = vigil::read_sample_file(path, channel).samples;
  if (v.empty()) throw std::runtime_error(path + ": the file holds no samples");
  return v;
}

std::vector<double> read_input(const CliArgs& a) {
  if (!a.has("in")) throw Usage("--in FILE is required");
  const auto channel = uint32_t(a.has("channel") ? a.number("channel", 0, 65535) : 0);
  return read_samples(a.get("in"), channel);
}

std::vector<float> to_float(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }
std::vector<double> to_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

vigil::WindowSpec window_of(const CliArgs& a, const std::string& fallback) {
  const std::string name = a.has("window") ? a.get("window") : fallback;
  const auto kind = vigil::parse_window_kind(name);
  if (!kind) throw Usage("--window must be hamming, hann, blackman, kaiser or rectangular, got '" + name + "'");
  vigil::WindowSpec w{*kind};
  if (a.has("beta") && a.has("atten")) throw Usage("give --beta or --atten, not both");
  if ((a.has("beta") || a.has("atten")) && *kind != vigil::WindowKind::kKaiser)
    throw Usage("--beta and --atten apply to --window kaiser only");
  if (a.has("beta")) w.kaiser_beta = a.number("beta", 0, 50);
  if (a.has("atten")) w.kaiser_beta = vigil::kaiser_beta_for_attenuation(a.number("atten", 0, 300));
  return w;
}

unsigned levels_of(const CliArgs& a, bool required) {
  if (!a.has("levels")) {
    if (required) throw Usage("--levels J is required");
    return 0;
  }
  return unsigned(a.number("levels", 1, 28));
}

std::string wavelet_of(const CliArgs& a) {
  if (!a.has("wavelet")) throw Usage("--wavelet NAME is required (haar, db1..db20, sym2..sym20)");
  const std::string w = a.get("wavelet");
  if (!vigil::find_wavelet(w)) throw Usage("--wavelet must be haar, db1..db20 or sym2..sym20, got '" + w + "'");
  return w;
}

// Operations with a CUDA twin in this build (vigil-dsp --backend cuda).
bool has_cuda_twin(const std::string& op) {
  return VIGIL_HAVE_CUDA && (op == "fir" || op == "conv" || op == "psd" || op == "dwt" || op == "idwt" || op == "denoise");
}

std::vector<double> run(const std::string& op, const CliArgs& a, bool on_gpu) {
  (void)on_gpu;  // read only when this build has CUDA
  if (op == "firdesign") {
    const auto type = vigil::parse_filter_type(a.get("type"));
    if (!type) throw Usage("--type must be lowpass, highpass, bandpass or bandstop, got '" + a.get("type") + "'");
    if (!a.has("taps") || !a.has("cutoff") || !a.has("rate")) throw Usage("firdesign needs --taps, --cutoff and --rate");
    vigil::FirSpec s;
    s.type = *type;
    s.taps = size_t(a.number("taps", 1, 65536));
    s.rate_hz = a.number("rate", 1e-9, 1e12);
    std::stringstream cut(a.get("cutoff"));
    std::string f1, f2;
    std::getline(cut, f1, ',');
    std::getline(cut, f2, ',');
    const bool two = s.type == vigil::FilterType::kBandpass || s.type == vigil::FilterType::kBandstop;
    if (two == f2.empty()) throw Usage(std::string("--cutoff takes ") + (two ? "two frequencies F1,F2" : "one frequency") +
                                       " for " + std::string(vigil::to_string(s.type)) + ", got '" + a.get("cutoff") + "'");
    char* end = nullptr;
    s.f1_hz = std::strtod(f1.c_str(), &end);
    if (*end) throw Usage("--cutoff: not a number: '" + f1 + "'");
    if (two) {
      s.f2_hz = std::strtod(f2.c_str(), &end);
      if (*end) throw Usage("--cutoff: not a number: '" + f2 + "'");
    }
    s.window = window_of(a, "hamming");
    try {
      return vigil::design_fir(s);
    } catch (const std::invalid_argument& e) {
      throw Usage(e.what());
    }
  }
  const std::vector<float> x = to_float(read_input(a));
  if (op == "fir" || op == "conv") {
    const std::string key = op == "fir" ? "taps" : "kernel";
    if (!a.has(key)) throw Usage("--" + key + " FILE is required");
    const std::vector<float> h = to_float(read_samples(a.get(key)));
    std::vector<float> y(x.size() + h.size() - 1);
#if VIGIL_HAVE_CUDA
    if (on_gpu)
      vigil::cuda::convolve_full_cuda(x.data(), x.size(), h.data(), h.size(), y.data());
    else
#endif
      vigil::convolve_full(x.data(), x.size(), h.data(), h.size(), y.data());
    if (op == "fir") y.resize(x.size());
    return to_double(y);
  }
  if (op == "dwt" || op == "idwt") {
#if VIGIL_HAVE_CUDA
    if (on_gpu) {
      vigil::DenoiseSpec spec;
      spec.wavelet = wavelet_of(a);
      spec.levels = levels_of(a, true);
      return to_double(vigil::cuda::wavelet_cuda(op == "dwt" ? vigil::cuda::WaveletOp::kForward
                                                             : vigil::cuda::WaveletOp::kInverse,
                                                 spec, x.data(), x.size()));
    }
#endif
    vigil::Dwt dwt(*vigil::find_wavelet(wavelet_of(a)), x.size(), levels_of(a, true));
    std::vector<float> y(x.size());
    if (op == "dwt")
      dwt.forward(x.data(), y.data());
    else
      dwt.inverse(x.data(), y.data());
    return to_double(y);
  }
  if (op == "denoise") {
    vigil::DenoiseSpec spec;
    spec.wavelet = wavelet_of(a);
    spec.levels = levels_of(a, false);
    if (a.has("mode")) {
      const auto m = vigil::parse_threshold_mode(a.get("mode"));
      if (!m) throw Usage("--mode must be soft or hard, got '" + a.get("mode") + "'");
      spec.mode = *m;
    }
    if (a.has("noise")) {
      const auto n = vigil::parse_noise_estimate(a.get("noise"));
      if (!n) throw Usage("--noise must be finest or per-level, got '" + a.get("noise") + "'");
      spec.noise = *n;
    }
#if VIGIL_HAVE_CUDA
    if (on_gpu) return to_double(vigil::cuda::wavelet_cuda(vigil::cuda::WaveletOp::kDenoise, spec, x.data(), x.size()));
#endif
    vigil::WaveletDenoiser den(spec, x.size());
    std::vector<float> y(x.size());
    den.process(x.data(), y.data());
    return to_double(y);
  }
  // psd
  if (!a.has("rate") || !a.has("nperseg")) throw Usage("psd needs --rate and --nperseg");
  const auto nperseg = size_t(a.number("nperseg", 4, 1 << 22));
  if (nperseg % 2) throw Usage("--nperseg must be even, got " + std::to_string(nperseg));
  if (x.size() < nperseg)
    throw Usage("--nperseg " + std::to_string(nperseg) + " is longer than the input (" + std::to_string(x.size()) + " samples)");
  const double rate = a.number("rate", 1e-9, 1e12);
#if VIGIL_HAVE_CUDA
  if (on_gpu) return vigil::cuda::welch_psd_cuda(x.data(), x.size(), uint32_t(nperseg), rate, window_of(a, "hann"));
#endif
  vigil::WelchPsd welch(nperseg, rate, window_of(a, "hann"));
  std::vector<double> psd(welch.bins());
  welch.compute(x.data(), x.size(), psd.data());
  return psd;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::cout << kUsage;
    return argc < 2 ? kExitUsage : kExitOk;
  }
  const std::string op = argv[1];
  const auto it = kOps.find(op);
  if (it == kOps.end()) {
    std::cerr << "vigil-dsp: unknown operation '" << op << "'\n" << kUsage;
    return kExitUsage;
  }
  CliArgs args({{"in", true, "input file", ""},        {"out", true, "output file", ""},
                {"backend", true, "cpu, cuda or auto", "auto"}, {"channel", true, "WAV channel", ""},
                {"type", true, "filter type", ""},     {"taps", true, "taps (count or file)", ""},
                {"cutoff", true, "F1[,F2] Hz", ""},    {"rate", true, "sample rate Hz", ""},
                {"window", true, "window", ""},        {"beta", true, "Kaiser beta", ""},
                {"atten", true, "Kaiser attenuation dB", ""}, {"kernel", true, "kernel file", ""},
                {"wavelet", true, "wavelet", ""},      {"levels", true, "levels", ""},
                {"mode", true, "soft or hard", ""},    {"noise", true, "finest or per-level", ""},
                {"nperseg", true, "segment length", ""}, {"geometry", true, "AE sensor geometry file", ""},
                {"hits", true, "AE hits (JSON lines)", ""}, {"help", false, "help", ""}});
  try {
    args.parse(argc - 1, argv + 1);
    if (args.has("help")) {  // vigil-dsp OP --help
      std::cout << kUsage;
      return kExitOk;
    }
    for (const char* name : {"in", "out", "backend", "channel", "type", "taps", "cutoff", "rate", "window", "beta",
                             "atten", "kernel", "wavelet", "levels", "mode", "noise", "nperseg", "geometry", "hits"})
      if (args.has(name) && !it->second.count(name))
        throw Usage("--" + std::string(name) + " does not apply to " + op);
    if (op == "aelocate") {
      if (!args.has("geometry") || !args.has("hits")) throw Usage("aelocate needs --geometry and --hits");
      return vigil::run_ae_locate(args.get("geometry"), args.get("hits"),
                                  args.has("rate") ? args.number("rate", 1, 1e12) : 0, std::cout, std::cerr);
    }
    const std::string backend = args.get("backend");
    if (backend != "cpu" && backend != "cuda" && backend != "auto")
      throw Usage("--backend must be cpu, cuda or auto, got '" + backend + "'");
    if (backend == "cuda" && !has_cuda_twin(op))
      throw Usage(std::string("--backend cuda: ") +
                  (VIGIL_HAVE_CUDA ? "the CUDA twin of '" + op + "' is not written yet (fir, conv, psd, dwt, idwt and denoise have one)"
                                   : std::string("this build has no CUDA backend (VIGIL_CUDA=OFF or no nvcc)")) +
                  "; use cpu or auto");
    if (!args.has("out")) throw Usage("--out FILE is required");
    auto ext_of = [](const std::string& f) {
      const size_t dot = f.rfind('.');
      return dot == std::string::npos ? std::string() : f.substr(dot + 1);
    };
    for (const char* name : {"in", "taps", "kernel"}) {
      if (!args.has(name) || (std::string(name) == "taps" && op == "firdesign")) continue;
      const std::string e = ext_of(args.get(name));
      if (e != "f32" && e != "f64" && e != "wav")
        throw Usage("--" + std::string(name) + " must name a .f32, .f64 or .wav file, got '" + args.get(name) + "'");
    }
    if (const std::string e = ext_of(args.get("out")); e != "f32" && e != "f64")
      throw Usage("--out must name a .f32 or .f64 file, got '" + args.get("out") + "'");
    // auto stays on the CPU for files: results then never depend on the machine.
    const std::vector<double> y = run(op, args, backend == "cuda");
    vigil::write_sample_file(args.get("out"), y);
  } catch (const Usage& e) {
    std::cerr << "vigil-dsp " << op << ": " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    std::cerr << "vigil-dsp " << op << ": " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "vigil-dsp " << op << ": " << e.what() << "\n";
    return kExitFailure;
  }
  return kExitOk;
}
