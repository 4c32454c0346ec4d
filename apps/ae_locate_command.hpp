// vigil-dsp aelocate: AE hits (the JSON lines `vigil-listen --json` writes, or bare ae_hit event
// objects) and a sensor geometry file (config/ae_geometry_loader.hpp) -> one JSON line per event
// (type ae_event: position, residual, hits, or why it is not locatable), then a summary line with
// the counts and the cluster cells. So a recording's hits can be located again with other
// parameters. Arrival time = frame / rate (the rate from the hits' start event, or --rate).
#pragma once

#include <ostream>
#include <string>

namespace vigil {

// Exit status: 0 done, 1 an input it cannot read or use (named, with line and column), 2 no rate.
int run_ae_locate(const std::string& geometry_path, const std::string& hits_path, double rate_hz, std::ostream& out,
                  std::ostream& err);

}  // namespace vigil
