#include "stages/stage.hpp"

namespace vigil {

StageUpdatePlan Stage::plan_update(const StageSettings&) const {
  StageUpdatePlan plan;
  plan.structural = true;
  plan.why = "its settings changed";
  return plan;
}

}  // namespace vigil
