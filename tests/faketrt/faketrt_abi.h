// The binary interface of the TensorRT 10.15 runtime that Torch-TensorRT 2.11's
// libtorchtrt_runtime.so uses, declared in this project's own words so that a
// fake libnvinfer.so.10 can stand behind the real Torch-TensorRT runtime.
//
// How TensorRT 10 lays its objects out (Itanium C++ ABI, x86-64):
// * A public object (IRuntime, ICudaEngine, IExecutionContext, IHostMemory,
//   IEngineInspector) is 16 bytes: a vtable pointer whose only entries are the
//   destructor pair (slot 0 complete, slot 1 deleting) and, at offset 8, mImpl.
//   Every public method is an inline forward to a virtual method of mImpl, so
//   the caller's machine code reads mImpl and calls `*(vtable + 8 * slot)`.
//   The caller frees public objects with `delete` (slot 1).
// * An mImpl object starts with its own destructor pair; its methods follow
//   from slot 2 in the order listed below.
// * IPluginRegistry has no mImpl: its own vtable of 19 slots, with the
//   destructor pair at 3-4.
//
// Each Impl class below declares its slots in vtable order: the methods this
// fake implements under their purpose, every other slot as `slot_N()` that
// aborts naming interface and slot. slot_check.h verifies every slot number
// from pointers to the virtual members at build time (tests/faketrt/build.sh)
// and when the library loads.
#pragma once

#include <cstddef>
#include <cstdint>

namespace faketrt {

// nvinfer1::Dims64: returned through a hidden pointer (72 bytes, trivially copyable).
struct Dims64 {
  int32_t nbDims;
  int64_t d[8];
};
static_assert(sizeof(Dims64) == 72, "Dims64 is 72 bytes");

// nvinfer1::DataType values (int32 enum).
enum DataType : int32_t {
  kFloat = 0, kHalf = 1, kInt8 = 2, kInt32 = 3, kBool = 4, kUInt8 = 5, kFp8 = 6, kBf16 = 7, kInt64 = 8,
};
// nvinfer1::TensorIOMode values.
enum TensorIOMode : int32_t { kIONone = 0, kIOInput = 1, kIOOutput = 2 };
// nvinfer1::LayerInformationFormat values (the engine inspector's output).
enum LayerInformationFormat : int32_t { kOneLine = 0, kJson = 1 };
// nvinfer1::ILogger::Severity values.
enum Severity : int32_t { kInternalError = 0, kError = 1, kWarning = 2, kInfo = 3, kVerbose = 4 };

[[noreturn]] void not_implemented(const char* interface, int slot) noexcept;

#define FAKETRT_UNIMPLEMENTED(IFACE, N) \
  virtual void slot_##N() { not_implemented(#IFACE, N); }

// Interfaces of the caller that the fake calls back into (declared, not
// defined: their objects come from the caller).
class Logger {  // nvinfer1::ILogger: log at slot 0
 public:
  virtual void log(int32_t severity, const char* msg) noexcept = 0;
};
class Profiler {  // nvinfer1::IProfiler: reportLayerTime at slot 0
 public:
  virtual void reportLayerTime(const char* layer_name, float ms) noexcept = 0;
};
class OutputAllocator {  // nvinfer1::IOutputAllocator
 public:
  virtual int32_t getAPILanguage() const noexcept = 0;    // 0
  virtual void* getInterfaceInfo() const noexcept = 0;   // 1
  virtual ~OutputAllocator() = default;                  // 2, 3
  virtual void* reallocateOutput(const char* name, void* current, uint64_t size, uint64_t align) noexcept = 0;  // 4
  virtual void* reallocateOutputAsync(const char* name, void* current, uint64_t size, uint64_t align,
                                      void* stream) noexcept = 0;                                 // 5
  virtual void notifyShape(const char* name, const Dims64& dims) noexcept = 0;                   // 6
};

// Base of every mImpl: the destructor pair at slots 0 and 1.
class Impl {
 public:
  virtual ~Impl() = default;
};

// A public object: vtable (destructor pair only) + mImpl at offset 8. Owns its impl.
class PublicObject {
 public:
  explicit PublicObject(Impl* impl) noexcept : mImpl(impl) {}
  virtual ~PublicObject() { delete mImpl; }
  Impl* mImpl;
};

class EngineImpl;
class ContextImpl;

// nvinfer1::IHostMemory's impl (VHostMemory).
class HostMemoryImpl : public Impl {
 public:
  virtual void* data() const noexcept = 0;      // 2
  virtual size_t size() const noexcept = 0;     // 3
  virtual int32_t type() const noexcept = 0;    // 4
};

// nvinfer1::IRuntime's impl (VRuntime, 24 slots).
class RuntimeImpl : public Impl {
 public:
  FAKETRT_UNIMPLEMENTED(VRuntime, 2)  // getPImpl
  virtual PublicObject* deserializeCudaEngine(const void* blob, size_t size) noexcept = 0;  // 3
  FAKETRT_UNIMPLEMENTED(VRuntime, 4)   // deserializeCudaEngine(IStreamReader&)
  FAKETRT_UNIMPLEMENTED(VRuntime, 5)   // setDLACore
  FAKETRT_UNIMPLEMENTED(VRuntime, 6)   // getDLACore
  FAKETRT_UNIMPLEMENTED(VRuntime, 7)   // getNbDLACores
  FAKETRT_UNIMPLEMENTED(VRuntime, 8)   // setGpuAllocator
  FAKETRT_UNIMPLEMENTED(VRuntime, 9)   // setErrorRecorder
  FAKETRT_UNIMPLEMENTED(VRuntime, 10)  // getErrorRecorder
  FAKETRT_UNIMPLEMENTED(VRuntime, 11)  // getLogger
  FAKETRT_UNIMPLEMENTED(VRuntime, 12)  // setMaxThreads
  FAKETRT_UNIMPLEMENTED(VRuntime, 13)  // getMaxThreads
  FAKETRT_UNIMPLEMENTED(VRuntime, 14)  // setTemporaryDirectory
  FAKETRT_UNIMPLEMENTED(VRuntime, 15)  // getTemporaryDirectory
  FAKETRT_UNIMPLEMENTED(VRuntime, 16)  // setTempfileControlFlags
  FAKETRT_UNIMPLEMENTED(VRuntime, 17)  // getTempfileControlFlags
  FAKETRT_UNIMPLEMENTED(VRuntime, 18)  // getPluginRegistry
  FAKETRT_UNIMPLEMENTED(VRuntime, 19)  // setPluginRegistryParent
  FAKETRT_UNIMPLEMENTED(VRuntime, 20)  // loadRuntime
  FAKETRT_UNIMPLEMENTED(VRuntime, 21)  // setEngineHostCodeAllowed
  FAKETRT_UNIMPLEMENTED(VRuntime, 22)  // getEngineHostCodeAllowed
  FAKETRT_UNIMPLEMENTED(VRuntime, 23)  // deserializeCudaEngineV2
};

// nvinfer1::ICudaEngine's impl (VCudaEngine, 59 slots).
class EngineImpl : public Impl {
 public:
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 2)  // getPImpl
  virtual int32_t getNbLayers() const noexcept = 0;                          // 3
  virtual PublicObject* serialize() const noexcept = 0;                      // 4 -> IHostMemory*
  virtual PublicObject* createExecutionContext(int32_t strategy) noexcept = 0;  // 5 -> IExecutionContext*
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 6)   // createExecutionContextWithoutDeviceMemory
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 7)   // getDeviceMemorySize
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 8)   // isRefittable
  virtual const char* getName() const noexcept = 0;                          // 9
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 10)  // getNbOptimizationProfiles
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 11)  // getProfileTensorValues
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 12)  // getEngineCapability
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 13)  // setErrorRecorder
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 14)  // getErrorRecorder
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 15)  // hasImplicitBatchDimension
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 16)  // getTacticSources
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 17)  // getProfilingVerbosity
  virtual PublicObject* createEngineInspector() const noexcept = 0;          // 18 -> IEngineInspector*
  virtual Dims64 getTensorShape(const char* name) const noexcept = 0;        // 19
  virtual int32_t getTensorDataType(const char* name) const noexcept = 0;    // 20
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 21)  // getTensorLocation
  virtual bool isShapeInferenceIO(const char* name) const noexcept = 0;      // 22
  virtual int32_t getTensorIOMode(const char* name) const noexcept = 0;      // 23
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 24)  // getTensorBytesPerComponent
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 25)  // getTensorComponentsPerElement
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 26)  // getTensorFormat
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 27)  // getTensorFormatDesc
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 28)  // getTensorVectorizedDim
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 29)  // getProfileShape
  virtual int32_t getNbIOTensors() const noexcept = 0;                       // 30
  virtual const char* getIOTensorName(int32_t index) const noexcept = 0;     // 31
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 32)  // getHardwareCompatibilityLevel
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 33)  // getNbAuxStreams
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 34)  // getTensorBytesPerComponent (profile)
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 35)  // getTensorComponentsPerElement (profile)
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 36)  // getTensorFormat (profile)
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 37)  // getTensorFormatDesc (profile)
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 38)  // getTensorVectorizedDim (profile)
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 39)  // createSerializationConfig
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 40)  // serializeWithConfig
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 41)  // getDeviceMemorySizeForProfile
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 42)  // createRefitter
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 43)  // setWeightStreamingBudget
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 44)  // getWeightStreamingBudget
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 45)  // getMinimumWeightStreamingBudget
  virtual int64_t getStreamableWeightsSize() const noexcept = 0;             // 46
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 47)  // isDebugTensor
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 48)  // setWeightStreamingBudgetV2 (asked only with streamable weights)
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 49)  // getWeightStreamingBudgetV2
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 50)  // getWeightStreamingAutomaticBudget
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 51)  // getWeightStreamingScratchMemorySize
  virtual int64_t getDeviceMemorySizeV2() const noexcept = 0;                // 52
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 53)  // getDeviceMemorySizeForProfileV2
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 54)  // getProfileTensorValuesV2
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 55)  // createExecutionContextWithRuntimeConfig
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 56)  // createRuntimeConfig
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 57)  // getEngineStat
  FAKETRT_UNIMPLEMENTED(VCudaEngine, 58)  // getAliasedInputTensor
};

// nvinfer1::IExecutionContext's impl (VExecutionContext, 53 slots). Streams are cudaStream_t.
class ContextImpl : public Impl {
 public:
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 2)  // getPImpl
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 3)  // setDebugSync
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 4)  // getDebugSync
  virtual void setProfiler(Profiler* profiler) noexcept = 0;                          // 5
  virtual Profiler* getProfiler() const noexcept = 0;                                 // 6
  virtual const PublicObject& getEngine() const noexcept = 0;                         // 7 -> ICudaEngine const&
  virtual void setName(const char* name) noexcept = 0;                                // 8
  virtual const char* getName() const noexcept = 0;                                   // 9
  virtual void setDeviceMemory(void* memory) noexcept = 0;                            // 10
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 11)  // getOptimizationProfile
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 12)  // allInputDimensionsSpecified
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 13)  // allInputShapesSpecified
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 14)  // setErrorRecorder
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 15)  // getErrorRecorder
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 16)  // executeV2
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 17)  // setOptimizationProfileAsync
  virtual void setEnqueueEmitsProfile(bool emits) noexcept = 0;                      // 18
  virtual bool getEnqueueEmitsProfile() const noexcept = 0;                           // 19
  virtual bool reportToProfiler() const noexcept = 0;                                 // 20
  virtual bool setInputShape(const char* name, const Dims64& dims) noexcept = 0;     // 21
  virtual Dims64 getTensorShape(const char* name) const noexcept = 0;                // 22
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 23)  // getTensorStrides
  virtual bool setTensorAddress(const char* name, void* data) noexcept = 0;          // 24
  virtual const void* getTensorAddress(const char* name) const noexcept = 0;         // 25
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 26)  // setInputTensorAddress
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 27)  // setOutputTensorAddress
  virtual int32_t inferShapes(int32_t nb_max_names, const char** names) noexcept = 0;  // 28
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 29)  // setInputConsumedEvent
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 30)  // getInputConsumedEvent
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 31)  // getOutputTensorAddress
  virtual bool setOutputAllocator(const char* name, OutputAllocator* allocator) noexcept = 0;  // 32
  virtual OutputAllocator* getOutputAllocator(const char* name) const noexcept = 0;          // 33
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 34)  // getMaxOutputSize
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 35)  // setTemporaryStorageAllocator
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 36)  // getTemporaryStorageAllocator
  virtual bool enqueueV3(void* stream) noexcept = 0;                                 // 37
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 38)  // setPersistentCacheLimit
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 39)  // getPersistentCacheLimit
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 40)  // setNvtxVerbosity
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 41)  // getNvtxVerbosity
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 42)  // setAuxStreams
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 43)  // setDebugListener
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 44)  // getDebugListener
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 45)  // setTensorDebugState
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 46)  // getDebugState
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 47)  // setAllTensorsDebugState
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 48)  // updateDeviceMemorySizeForShapes
  virtual void setDeviceMemoryV2(void* memory, int64_t size) noexcept = 0;           // 49
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 50)  // getRuntimeConfig
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 51)  // setUnfusedTensorsDebugState
  FAKETRT_UNIMPLEMENTED(VExecutionContext, 52)  // getUnfusedTensorsDebugState
};

// nvinfer1::IEngineInspector's impl (VEngineInspector, 9 slots).
class InspectorImpl : public Impl {
 public:
  FAKETRT_UNIMPLEMENTED(VEngineInspector, 2)  // getPImpl
  virtual bool setExecutionContext(const PublicObject* context) noexcept = 0;  // 3
  virtual const PublicObject* getExecutionContext() const noexcept = 0;                  // 4
  virtual const char* getLayerInformation(int32_t layer, int32_t format) const noexcept = 0;  // 5
  virtual const char* getEngineInformation(int32_t format) const noexcept = 0;           // 6
  FAKETRT_UNIMPLEMENTED(VEngineInspector, 7)  // setErrorRecorder
  FAKETRT_UNIMPLEMENTED(VEngineInspector, 8)  // getErrorRecorder
};

// nvinfer1::IPluginRegistry (no mImpl, 19 slots, destructor pair at 3-4).
class PluginRegistry {
 public:
  virtual bool registerCreator(void* creator, const char* plugin_namespace) noexcept = 0;  // 0
  virtual void* const* getPluginCreatorList(int32_t* count) noexcept = 0;                 // 1
  FAKETRT_UNIMPLEMENTED(IPluginRegistry, 2)  // getPluginCreator
  virtual ~PluginRegistry() = default;                                                    // 3, 4
  FAKETRT_UNIMPLEMENTED(IPluginRegistry, 5)
  FAKETRT_UNIMPLEMENTED(IPluginRegistry, 6)
  FAKETRT_UNIMPLEMENTED(IPluginRegistry, 7)
  FAKETRT_UNIMPLEMENTED(IPluginRegistry, 8)
  FAKETRT_UNIMPLEMENTED(IPluginRegistry, 9)
  FAKETRT_UNIMPLEMENTED(IPluginRegistry, 10)
  FAKETRT_UNIMPLEMENTED(IPluginRegistry, 11)
  FAKETRT_UNIMPLEMENTED(IPluginRegistry, 12)  // registerCreatorV3
  FAKETRT_UNIMPLEMENTED(IPluginRegistry, 13)  // getAllCreators
  FAKETRT_UNIMPLEMENTED(IPluginRegistry, 14)
  FAKETRT_UNIMPLEMENTED(IPluginRegistry, 15)
  FAKETRT_UNIMPLEMENTED(IPluginRegistry, 16)
  FAKETRT_UNIMPLEMENTED(IPluginRegistry, 17)
  FAKETRT_UNIMPLEMENTED(IPluginRegistry, 18)
};

// The number of slots of each vtable (the largest slot + 1).
constexpr int kRuntimeSlots = 24, kEngineSlots = 59, kContextSlots = 53, kInspectorSlots = 9,
              kHostMemorySlots = 5, kPluginRegistrySlots = 19;

}  // namespace faketrt
