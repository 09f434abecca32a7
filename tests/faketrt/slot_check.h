// Verifies the slot number of every virtual method declared in faketrt_abi.h.
//
// Itanium C++ ABI: a pointer to a virtual member function holds 1 + the
// method's byte offset in the vtable in its first word, so (word - 1) / 8 is
// the slot. A method declared in the wrong place, a missing or an extra slot
// shows up as a mismatch here. Run by build.sh (a build fails on a mismatch)
// and by the library when it loads (it aborts instead of running misplaced).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "faketrt_abi.h"

namespace faketrt {

template <typename M>
int64_t slot_of(M member) {
  static_assert(sizeof(M) == 16, "Itanium pointer to member function: {ptr, adj}");
  uint64_t word = 0;
  std::memcpy(&word, &member, sizeof word);
  if ((word & 1) == 0) return -1;  // not virtual
  return static_cast<int64_t>((word - 1) / 8);
}

// Returns the number of mismatches, each printed to `out`.
inline int check_slots(FILE* out) {
  int bad = 0;
  auto expect = [&](const char* what, int64_t got, int64_t want) {
    if (got != want) {
      std::fprintf(out, "faketrt slot check: %s is slot %lld, expected %lld\n", what, static_cast<long long>(got),
                   static_cast<long long>(want));
      ++bad;
    }
  };
#define FAKETRT_EXPECT(C, M, N) expect(#C "::" #M, slot_of(&C::M), N)
#define FAKETRT_EXPECT_UNIMPL(C, N) expect(#C "::slot_" #N, slot_of(&C::slot_##N), N)
  const PublicObject probe(nullptr);
  const auto impl_offset = reinterpret_cast<const char*>(&probe.mImpl) - reinterpret_cast<const char*>(&probe);
  if (sizeof(PublicObject) != 16 || impl_offset != 8) {
    std::fprintf(out, "faketrt slot check: a public object must be 16 bytes with mImpl at 8\n");
    ++bad;
  }
  FAKETRT_EXPECT(OutputAllocator, getAPILanguage, 0);
  FAKETRT_EXPECT(OutputAllocator, getInterfaceInfo, 1);
  FAKETRT_EXPECT(OutputAllocator, reallocateOutput, 4);
  FAKETRT_EXPECT(OutputAllocator, reallocateOutputAsync, 5);
  FAKETRT_EXPECT(OutputAllocator, notifyShape, 6);
  FAKETRT_EXPECT(Logger, log, 0);
  FAKETRT_EXPECT(Profiler, reportLayerTime, 0);
  FAKETRT_EXPECT(HostMemoryImpl, data, 2);
  FAKETRT_EXPECT(HostMemoryImpl, size, 3);
  FAKETRT_EXPECT(HostMemoryImpl, type, 4);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 2);
  FAKETRT_EXPECT(RuntimeImpl, deserializeCudaEngine, 3);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 4);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 5);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 6);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 7);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 8);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 9);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 10);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 11);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 12);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 13);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 14);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 15);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 16);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 17);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 18);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 19);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 20);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 21);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 22);
  FAKETRT_EXPECT_UNIMPL(RuntimeImpl, 23);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 2);
  FAKETRT_EXPECT(EngineImpl, getNbLayers, 3);
  FAKETRT_EXPECT(EngineImpl, serialize, 4);
  FAKETRT_EXPECT(EngineImpl, createExecutionContext, 5);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 6);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 7);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 8);
  FAKETRT_EXPECT(EngineImpl, getName, 9);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 10);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 11);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 12);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 13);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 14);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 15);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 16);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 17);
  FAKETRT_EXPECT(EngineImpl, createEngineInspector, 18);
  FAKETRT_EXPECT(EngineImpl, getTensorShape, 19);
  FAKETRT_EXPECT(EngineImpl, getTensorDataType, 20);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 21);
  FAKETRT_EXPECT(EngineImpl, isShapeInferenceIO, 22);
  FAKETRT_EXPECT(EngineImpl, getTensorIOMode, 23);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 24);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 25);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 26);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 27);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 28);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 29);
  FAKETRT_EXPECT(EngineImpl, getNbIOTensors, 30);
  FAKETRT_EXPECT(EngineImpl, getIOTensorName, 31);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 32);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 33);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 34);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 35);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 36);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 37);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 38);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 39);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 40);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 41);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 42);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 43);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 44);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 45);
  FAKETRT_EXPECT(EngineImpl, getStreamableWeightsSize, 46);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 47);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 48);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 49);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 50);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 51);
  FAKETRT_EXPECT(EngineImpl, getDeviceMemorySizeV2, 52);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 53);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 54);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 55);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 56);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 57);
  FAKETRT_EXPECT_UNIMPL(EngineImpl, 58);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 2);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 3);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 4);
  FAKETRT_EXPECT(ContextImpl, setProfiler, 5);
  FAKETRT_EXPECT(ContextImpl, getProfiler, 6);
  FAKETRT_EXPECT(ContextImpl, getEngine, 7);
  FAKETRT_EXPECT(ContextImpl, setName, 8);
  FAKETRT_EXPECT(ContextImpl, getName, 9);
  FAKETRT_EXPECT(ContextImpl, setDeviceMemory, 10);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 11);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 12);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 13);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 14);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 15);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 16);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 17);
  FAKETRT_EXPECT(ContextImpl, setEnqueueEmitsProfile, 18);
  FAKETRT_EXPECT(ContextImpl, getEnqueueEmitsProfile, 19);
  FAKETRT_EXPECT(ContextImpl, reportToProfiler, 20);
  FAKETRT_EXPECT(ContextImpl, setInputShape, 21);
  FAKETRT_EXPECT(ContextImpl, getTensorShape, 22);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 23);
  FAKETRT_EXPECT(ContextImpl, setTensorAddress, 24);
  FAKETRT_EXPECT(ContextImpl, getTensorAddress, 25);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 26);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 27);
  FAKETRT_EXPECT(ContextImpl, inferShapes, 28);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 29);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 30);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 31);
  FAKETRT_EXPECT(ContextImpl, setOutputAllocator, 32);
  FAKETRT_EXPECT(ContextImpl, getOutputAllocator, 33);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 34);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 35);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 36);
  FAKETRT_EXPECT(ContextImpl, enqueueV3, 37);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 38);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 39);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 40);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 41);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 42);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 43);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 44);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 45);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 46);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 47);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 48);
  FAKETRT_EXPECT(ContextImpl, setDeviceMemoryV2, 49);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 50);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 51);
  FAKETRT_EXPECT_UNIMPL(ContextImpl, 52);
  FAKETRT_EXPECT_UNIMPL(InspectorImpl, 2);
  FAKETRT_EXPECT(InspectorImpl, setExecutionContext, 3);
  FAKETRT_EXPECT(InspectorImpl, getExecutionContext, 4);
  FAKETRT_EXPECT(InspectorImpl, getLayerInformation, 5);
  FAKETRT_EXPECT(InspectorImpl, getEngineInformation, 6);
  FAKETRT_EXPECT_UNIMPL(InspectorImpl, 7);
  FAKETRT_EXPECT_UNIMPL(InspectorImpl, 8);
  FAKETRT_EXPECT(PluginRegistry, registerCreator, 0);
  FAKETRT_EXPECT(PluginRegistry, getPluginCreatorList, 1);
  FAKETRT_EXPECT_UNIMPL(PluginRegistry, 2);
  FAKETRT_EXPECT_UNIMPL(PluginRegistry, 5);
  FAKETRT_EXPECT_UNIMPL(PluginRegistry, 6);
  FAKETRT_EXPECT_UNIMPL(PluginRegistry, 7);
  FAKETRT_EXPECT_UNIMPL(PluginRegistry, 8);
  FAKETRT_EXPECT_UNIMPL(PluginRegistry, 9);
  FAKETRT_EXPECT_UNIMPL(PluginRegistry, 10);
  FAKETRT_EXPECT_UNIMPL(PluginRegistry, 11);
  FAKETRT_EXPECT_UNIMPL(PluginRegistry, 12);
  FAKETRT_EXPECT_UNIMPL(PluginRegistry, 13);
  FAKETRT_EXPECT_UNIMPL(PluginRegistry, 14);
  FAKETRT_EXPECT_UNIMPL(PluginRegistry, 15);
  FAKETRT_EXPECT_UNIMPL(PluginRegistry, 16);
  FAKETRT_EXPECT_UNIMPL(PluginRegistry, 17);
  FAKETRT_EXPECT_UNIMPL(PluginRegistry, 18);
  // The last slot of each vtable: nothing after it (the counts in faketrt_abi.h).
  expect("VRuntime slots", slot_of(&RuntimeImpl::slot_23) + 1, kRuntimeSlots);
  expect("VCudaEngine slots", slot_of(&EngineImpl::slot_58) + 1, kEngineSlots);
  expect("VExecutionContext slots", slot_of(&ContextImpl::slot_52) + 1, kContextSlots);
  expect("VEngineInspector slots", slot_of(&InspectorImpl::slot_8) + 1, kInspectorSlots);
  expect("VHostMemory slots", slot_of(&HostMemoryImpl::type) + 1, kHostMemorySlots);
  expect("IPluginRegistry slots", slot_of(&PluginRegistry::slot_18) + 1, kPluginRegistrySlots);
#undef FAKETRT_EXPECT
#undef FAKETRT_EXPECT_UNIMPL
  return bad;
}

}  // namespace faketrt
