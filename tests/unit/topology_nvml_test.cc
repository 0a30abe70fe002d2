// The NVIDIA driver's view (NVML, loaded at run time) merged into hwloc's: the real reader
// loading stand-ins of libnvidia-ml.so.1 (tests/unit/fake_nvml.c, values recorded on an H100),
// and the merge over recorded topologies.
#include <catch2/catch.hpp>
#include <string>

#include "binding/topology/gpu_driver_view.h"
#include "binding/topology/hwloc_topology.h"
#include "binding/topology/nvml_reader.h"
#include "binding/topology/topo_report.h"
#include "topology_test_fixtures.h"

using namespace tlaunch;

namespace {

std::string fakeNvml(int scenario) {
  return std::string(FAKE_NVML_DIR) + "/libfake_nvml_" + std::to_string(scenario) + ".so";
}

TopologySnapshot recorded(const std::string& prefix) {
  auto topo = loadTopology(test::topologyFixture(prefix));
  REQUIRE(topo.has_value());
  return *topo;
}

const std::string kH100Vm = "cloud-vm-firecracker_16vcpu_1xH100";
const std::string kJuwelsBooster = "jsc-juwels-booster-jwb0004";  // 4 PCI-only A100s

}  // namespace

TEST_CASE("NVML reader: a machine without the driver says so and lists nothing", "[nvml]") {
  auto r = readNvmlGpus("/nonexistent/libnvidia-ml.so.1");
  CHECK(r.state == NvmlReport::State::not_loaded);
  CHECK(r.error.find("libnvidia-ml.so.1") != std::string::npos);
  CHECK(r.gpus.empty());
}

TEST_CASE("NVML reader: the recorded H100 with its bus id in hwloc's form", "[nvml]") {
  auto r = readNvmlGpus(fakeNvml(0));
  REQUIRE(r.state == NvmlReport::State::ok);
  CHECK(r.driver_version == "580.159.04");
  REQUIRE(r.gpus.size() == 1);
  CHECK(r.gpus[0].busid == "0000:00:06.0");
  CHECK(r.gpus[0].uuid == "GPU-1fb43360-0847-5ec0-e96a-a1f40f2f23ae");
  CHECK(r.gpus[0].name == "NVIDIA H100 80GB HBM3");
  CHECK(r.device_errors.empty());
}

TEST_CASE("NVML reader: a driver and library that do not match fail to start with NVML's words", "[nvml]") {
  auto r = readNvmlGpus(fakeNvml(1));
  CHECK(r.state == NvmlReport::State::init_failed);
  CHECK(r.error == "Driver/library version mismatch");
  CHECK(r.gpus.empty());
}

TEST_CASE("NVML reader: a lost GPU is named by its index and the others still listed", "[nvml]") {
  auto r = readNvmlGpus(fakeNvml(2));
  REQUIRE(r.state == NvmlReport::State::ok);
  REQUIRE(r.gpus.size() == 1);
  REQUIRE(r.device_errors.size() == 1);
  CHECK(r.device_errors[0] == "NVML device 1: GPU is lost");
}

TEST_CASE("NVML reader: a device this process may not open is not an error", "[nvml]") {
  auto r = readNvmlGpus(fakeNvml(4));
  REQUIRE(r.state == NvmlReport::State::ok);
  CHECK(r.gpus.size() == 1);
  CHECK(r.inaccessible == 1);
  CHECK(r.device_errors.empty());
}

TEST_CASE("NVML reader: a bus id that is none, unterminated, is a device error and no GPU", "[nvml]") {
  auto r = readNvmlGpus(fakeNvml(5));
  REQUIRE(r.state == NvmlReport::State::ok);
  CHECK(r.gpus.empty());
  REQUIRE(r.device_errors.size() == 1);
  CHECK(r.device_errors[0] == "NVML device 0: bus id '" + std::string(31, 'Z') + "' unreadable");
}

TEST_CASE("NVML reader: a library without NVML's entry points is not taken for NVML", "[nvml]") {
  auto r = readNvmlGpus(fakeNvml(3));
  CHECK(r.state == NvmlReport::State::not_loaded);
  CHECK(r.error.find("lacks an NVML entry point") != std::string::npos);
}

TEST_CASE("NVML merge: the recorded PCI-only H100 gets the driver's model and UUID", "[nvml]") {
  TopologySnapshot topo = recorded(kH100Vm);
  REQUIRE(topo.gpus.size() == 1);
  CHECK_FALSE(topo.gpus[0].uuid.has_value());  // Debian's hwloc has no NVML component
  CHECK(topo.gpus[0].os_devices.empty());
  REQUIRE(hasNvidiaGpu(topo));
  const GpuDriverFacts facts = mergeNvml(topo, readNvmlGpus(fakeNvml(0)));
  CHECK(facts.consulted);
  CHECK(facts.nvidia_gpus == 1);
  CHECK(facts.unlisted.empty());
  REQUIRE(topo.gpus.size() == 1);
  CHECK(topo.gpus[0].uuid == "GPU-1fb43360-0847-5ec0-e96a-a1f40f2f23ae");
  CHECK(topo.gpus[0].model == "NVIDIA H100 80GB HBM3");
  CHECK(topo.gpus[0].os_devices == std::vector<std::string>{"nvml0"});
  const std::string report = renderTopoReport(topo, {}, facts);
  CHECK(report.find("NVIDIA H100 80GB HBM3") != std::string::npos);
  CHECK(report.find("NVIDIA driver 580.159.04: models and UUIDs from NVML") != std::string::npos);
}

TEST_CASE("NVML merge: GPUs NVML does not list are left out and named, the order kept", "[nvml]") {
  TopologySnapshot topo = recorded(kJuwelsBooster);
  REQUIRE(topo.gpus.size() == 4);
  const std::string second = topo.gpus[1].busid;
  NvmlReport nvml;
  nvml.state = NvmlReport::State::ok;
  nvml.driver_version = "470.57.02";
  for (size_t i = 0; i < topo.gpus.size(); ++i)
    if (i != 1) nvml.gpus.push_back({topo.gpus[i].busid, "GPU-0000000" + std::to_string(i) + "-aaaa", "A100-SXM4-40GB"});
  const auto before = topo.gpus;
  const GpuDriverFacts facts = mergeNvml(topo, nvml);
  CHECK(facts.nvidia_gpus == 4);
  CHECK(facts.unlisted == std::vector<std::string>{second});
  REQUIRE(topo.gpus.size() == 3);
  CHECK(topo.gpus[0].busid == before[0].busid);
  CHECK(topo.gpus[1].busid == before[2].busid);  // CUDA numbers the GPUs it has: the third is device 1
  CHECK(topo.gpus[2].busid == before[3].busid);
  CHECK(topo.gpus[1].uuid == "GPU-00000002-aaaa");
  CHECK(topo.gpus[1].os_devices == std::vector<std::string>{"nvml1"});  // NVML's own index
  CHECK(renderTopoReport(topo, {}, facts).find("left out (on PCI, not listed by NVML): " + second) !=
        std::string::npos);
}

TEST_CASE("NVML merge: without a working NVML the topology stays as hwloc found it", "[nvml]") {
  for (int scenario : {1, 3}) {
    TopologySnapshot topo = recorded(kJuwelsBooster);
    const auto before = topo;
    const GpuDriverFacts facts = mergeNvml(topo, readNvmlGpus(fakeNvml(scenario)));
    CHECK(facts.consulted);
    CHECK_FALSE(facts.answering());
    CHECK(topo == before);
    CHECK(renderTopoReport(topo, {}, facts).find("bus ids and PCI names only") != std::string::npos);
  }
}

TEST_CASE("NVML is asked only of a live machine: a recorded topology stays as recorded", "[nvml]") {
  TopologySnapshot topo = recorded(kH100Vm);
  REQUIRE(hasNvidiaGpu(topo));
  const auto before = topo;
  CHECK_FALSE(consultNvidiaDriver(topo, fakeNvml(0)).consulted);
  CHECK(topo == before);
}

TEST_CASE("NVML merge: other vendors' GPUs are not NVML's to judge", "[nvml]") {
  TopologySnapshot topo = recorded("llnl-corona282");  // 8 AMD MI50
  CHECK_FALSE(hasNvidiaGpu(topo));
  const auto before = topo;
  NvmlReport empty;
  empty.state = NvmlReport::State::ok;
  const GpuDriverFacts facts = mergeNvml(topo, empty);
  CHECK(facts.nvidia_gpus == 0);
  CHECK(facts.unlisted.empty());
  CHECK(topo == before);
}
