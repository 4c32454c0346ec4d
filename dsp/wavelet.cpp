#include "dsp/wavelet.hpp"


namespace vigil {
namespace {

struct Table {
  const char* name;
  int length;
  std::vector<double> rec_lo;  // a vector: an initializer_list member would dangle
};

const std::vector<Table>& tables() {
  static const std::vector<Table> t = {
#include "dsp/wavelet_filters.inc"
  };
  return t;
}

}  // namespace

std::optional<Wavelet> find_wavelet(std::string_view name) {
  for (const Table& t : tables()) {
    if (name != t.name) continue;
    Wavelet w;
    w.name = t.name;
    w.rec_lo.assign(t.rec_lo.begin(), t.rec_lo.end());
    const size_t n = w.rec_lo.size();
    w.dec_lo.assign(w.rec_lo.rbegin(), w.rec_lo.rend());
    w.rec_hi.resize(n);
    for (size_t k = 0; k < n; ++k) w.rec_hi[k] = (k % 2 ? -1.0 : 1.0) * w.rec_lo[n - 1 - k];
    w.dec_hi.assign(w.rec_hi.rbegin(), w.rec_hi.rend());
    return w;
  }
  return std::nullopt;
}

std::vector<std::string> wavelet_names() {
  std::vector<std::string> names;
  for (const Table& t : tables()) names.emplace_back(t.name);
  return names;
}

}  // namespace vigil
