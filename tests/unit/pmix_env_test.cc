#include <catch2/catch.hpp>

#include "bootstrap/pmix_env.h"

using Env = std::vector<std::string>;

TEST_CASE("pmix env: setEnv replaces every entry of the key and keeps the others") {
  Env env{"A=1", "OMPI_MCA_schizo=orte", "B=2", "OMPI_MCA_schizo=x"};
  tlaunch::setEnv(env, "OMPI_MCA_schizo", "^orte");
  CHECK(env == Env{"A=1", "B=2", "OMPI_MCA_schizo=^orte"});
  REQUIRE(tlaunch::findEnv(env, "OMPI_MCA_schizo"));
  CHECK(*tlaunch::findEnv(env, "OMPI_MCA_schizo") == "OMPI_MCA_schizo=^orte");
  CHECK_FALSE(tlaunch::findEnv(env, "OMPI_MCA"));  // whole key only
}

TEST_CASE("pmix env: inherited PMIx client state is dropped, user PMIx MCA parameters stay") {
  Env env{"PMIX_NAMESPACE=slurm.pmix.1.0", "PMIX_RANK=3", "PMIX_SERVER_URI41=x", "PMIX_MCA_psec=native",
          "PATH=/bin", "SLURM_JOBID=1", "XPMIX_RANK=1"};
  tlaunch::dropInheritedPmixVars(env);
  CHECK(env == Env{"PMIX_MCA_psec=native", "PATH=/bin", "SLURM_JOBID=1", "XPMIX_RANK=1"});
}
