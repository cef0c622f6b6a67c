// The shipped rules against messages written from the engines' and
// libraries' own sources (their message templates with made-up values), not
// from any corpus log: each row names the repository and file whose template
// it instantiates. A rule that knows only the wording of the logs it was
// tuned on fails here; so does a rule that fires on a warning or on a
// healthy start-up (the `unknown` rows).

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "modelkit/diagnosis/diagnosis_rules.h"
#include "modelkit/diagnosis/log_classifier.h"
#include "tests/testing/test_env.h"

namespace dcu::modelkit {
namespace {

struct Template {
  const char* source;  // repository and file of the message template
  const char* log;     // the lines a failed launch would show
  const char* want;    // failure class of the first finding, or "unknown"
};

const std::vector<Template>& Templates() {
  static const std::vector<Template> kTemplates = {
      // ------------------------------------------------------------ memory
      {"ggml-org/llama.cpp src/llama-context.cpp",
       "llama_init_from_model: failed to initialize the context: failed to allocate compute pp buffers",
       "cuda_oom_model_load"},
      {"ggml-org/llama.cpp ggml/src/ggml-alloc.c",
       "ggml_gallocr_reserve_n: failed to allocate CUDA_Host buffer of size 1073741824\n"
       "graph_reserve: failed to allocate compute buffers",
       "cuda_oom_model_load"},
      {"ggml-org/llama.cpp ggml/src/ggml-metal/ggml-metal.m",
       "ggml_backend_metal_buffer_type_alloc_buffer: error: failed to allocate buffer, size = 40960.00 MiB",
       "cuda_oom_model_load"},
      {"ollama/ollama ml/device.go (ErrNoMem)",
       "time=2025-06-01T10:00:00.000Z level=ERROR source=sched.go:478 msg=\"error loading llama server\" "
       "error=\"insufficient memory - required allocations: {InputWeights:1GiB}\"",
       "cuda_oom_model_load"},
      {"ollama/ollama llm/server.go (ErrLoadRequiredFull)",
       "Error: unable to load full model on GPU", "cuda_oom_model_load"},
      {"ollama/ollama llm/status.go (recoverable: it retries)",
       "ggml_backend_sched_reserve: compute buffer allocation failed, retrying without pipeline parallelism\n"
       "llama_context: graph splits = 2",
       "unknown"},
      {"NVIDIA cuBLAS / ROCm hipBLAS status names",
       "RuntimeError: CUDA error: HIPBLAS_STATUS_ALLOC_FAILED when calling `hipblasCreate(handle)`",
       "cuda_oom_model_load"},
      {"huggingface/text-generation-inference server/text_generation_server/models/flash_causal_lm.py",
       "RuntimeError: Not enough memory to handle 4096 prefill tokens. You need to decrease "
       "`--max-batch-prefill-tokens`",
       "cuda_oom_model_load"},
      {"InternLM/lmdeploy lmdeploy/pytorch/engine/executor/base.py",
       "RuntimeError: No enough gpu memory for runtime.", "cuda_oom_model_load"},
      {"pytorch/pytorch c10/core/impl/alloc_cpu.cpp",
       "RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate "
       "memory: you tried to allocate 283115520 bytes. Error code 12 (Cannot allocate memory)",
       "cuda_oom_model_load"},
      {"Windows ERROR_COMMITMENT_LIMIT via Python's OSError",
       "OSError: [WinError 1455] The paging file is too small for this operation to complete. Error "
       "loading \"C:\\x\\torch\\lib\\cudnn_adv_infer64_8.dll\" or one of its dependencies.",
       "cuda_oom_model_load"},
      {"ml-explore/mlx mlx/backend/metal/allocator.cpp",
       "RuntimeError: [metal::malloc] Attempting to allocate 135383101952 bytes which is greater than "
       "the maximum allowed buffer size of 86586540032 bytes.",
       "cuda_oom_model_load"},
      {"InternLM/lmdeploy lmdeploy/pytorch/engine/cache_engine.py",
       "RuntimeError: No enough gpu memory for kv cache.", "no_cache_blocks"},
      {"huggingface/text-generation-inference backends/v3/src/lib.rs (NotEnoughMemory)",
       "Error: Backend(NotEnoughMemory(32768))\n"
       "ERROR text_generation_launcher: Not enough memory to handle `max_total_tokens=32768`",
       "max_model_len_exceeds_kv_capacity"},
      {"vllm-project/vllm vllm/v1/worker/utils.py request_memory (wrapped by a terminal)",
       "ValueError: Free memory on device (5.61/61.27 GiB) on startup is less than desired\n"
       "GPU memory utilization (0.9, 55.14 GiB). Decrease GPU memory utilization or reduce GPU memory "
       "used by other processes.",
       "startup_free_memory_below_utilization"},
      {"vllm-project/vllm vllm/v1/worker/utils.py request_memory (wrapped after the device)",
       "ValueError: Free memory on device cuda:2\n"
       "(5.31/23.56 GiB) on startup is less than desired GPU memory\n"
       "utilization (0.8, 18.85 GiB)",
       "startup_free_memory_below_utilization"},
      {"vllm-project/vllm vllm/worker/worker.py (memory profiling assertion)",
       "AssertionError: Error in memory profiling. Initial free memory 20.1 GiB, current free memory "
       "31.5 GiB. This happens when the GPU memory was not properly cleaned up before initializing the "
       "vLLM instance.",
       "startup_free_memory_below_utilization"},
      {"sgl-project/sglang python/sglang/srt/model_executor/model_runner.py",
       "RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
       "min_per_gpu_memory=10.2, local_gpu_memory=79.1, local_gpu_memory * 0.9=71.2",
       "startup_free_memory_below_utilization"},
      {"vllm-project/vllm vllm/platforms/cuda.py get_attn_backend_cls (head size)",
       "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=80, "
       "dtype=torch.bfloat16, kv_cache_dtype=auto, block_size=16, use_mla=False, has_sink=False). "
       "Reasons: {FLASH_ATTN: [head_size not supported], FLASHINFER: [head_size not supported]}.",
       "unsupported_head_size"},
      {"vllm-project/vllm vllm/platforms/cuda.py get_attn_backend_cls (compute capability)",
       "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=576, "
       "dtype=torch.bfloat16, kv_cache_dtype=auto, use_mla=True, use_sparse=True). Reasons: "
       "{FLASH_ATTN_MLA: [compute capability not supported], FLASHMLA: [compute capability not "
       "supported], FLASH_ATTN: [head_size not supported, MLA not supported]}.",
       "unsupported_gpu_arch_runtime"},
      {"vllm-project/vllm vllm/platforms/rocm.py _capability_from_gcn_arch",
       "ValueError: Parsed unknown ROCm architecture from GCN arch 'gfx18446744073709551615': major=18, "
       "minor=4. Major version > 12 is beyond currently known AMD generations.",
       "unsupported_gpu_arch_runtime"},
      {"huggingface/transformers src/transformers/modeling_gguf_pytorch_utils.py",
       "ValueError: GGUF model with architecture qwen3moe is not supported yet.",
       "unsupported_model_architecture"},
      {"ollama/ollama llm/server.go",
       "Error: this model is not supported by your version of Ollama. You may need to upgrade",
       "unsupported_model_architecture"},
      {"vllm-project/vllm vllm/platforms/rocm.py verify_model_arch",
       "ValueError: Model architecture 'MambaForCausalLM' is not supported by ROCm for now.",
       "unsupported_model_architecture"},
      {"sgl-project/sglang python/sglang/srt/model_loader/utils.py resolve_transformers_arch",
       "ValueError: FalconForCausalLM has no SGlang implementation and the Transformers implementation "
       "is not compatible with SGLang.",
       "unsupported_model_architecture"},
      // Its warning when the Transformers backend can serve the model: not a failure.
      {"sgl-project/sglang python/sglang/srt/model_loader/utils.py resolve_transformers_arch (warning)",
       "[2025-06-01 10:00:00] FalconForCausalLM has no SGLang implementation, falling back to Transformers "
       "implementation. Some features may not be supported and performance may not be optimal.",
       "unknown"},
      // -------------------------------------------------- model and config
      {"vllm-project/vllm vllm/model_executor/models/registry.py",
       "ValueError: Cannot find model module. 'FooForCausalLM' is not a registered model in the "
       "Transformers library (only relevant if the model is meant to be in Transformers) and "
       "'AutoModel' is not present in the model config's 'auto_map' (relevant if the model is custom).",
       "unsupported_model_architecture"},
      {"InternLM/lmdeploy lmdeploy/pytorch/models/module_map / patch.py",
       "RuntimeError: Can not found rewrite for architectures: ['FooForCausalLM']",
       "unsupported_model_architecture"},
      {"ggml-org/llama.cpp src/llama-vocab.cpp",
       "llama_model_load: error loading model: error loading model vocabulary: unknown pre-tokenizer "
       "type: 'qwen35'",
       "unsupported_model_architecture"},
      {"python json/decoder.py via transformers' config loading",
       "json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 12 column "
       "3 (char 345)",
       "config_or_tokenizer_error"},
      {"huggingface/tokenizers (serde_json error Display)",
       "Exception: EOF while parsing a string at line 1 column 2097152", "config_or_tokenizer_error"},
      {"huggingface/transformers src/transformers/modeling_rope_utils.py",
       "KeyError: \"Missing required keys in `rope_scaling` for 'rope_type'='yarn': {'factor'}\"",
       "config_or_tokenizer_error"},
      {"huggingface/huggingface_hub src/huggingface_hub/utils/_validators.py (re-raised)",
       "ValueError: Repo id must use alphanumeric chars or '-', '_', '.', '--' and '..' are forbidden, "
       "'-' and '.' cannot start or end the name, max length is 96: '/data/models/Qwen'.",
       "model_path_not_found"},
      {"huggingface/huggingface_hub src/huggingface_hub/file_download.py",
       "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the disk "
       "cache and outgoing traffic has been disabled. To enable hf.co look-ups and downloads online, set "
       "'local_files_only' to False.",
       "model_path_not_found"},
      {"huggingface/huggingface_hub src/huggingface_hub/utils/_http.py",
       "huggingface_hub.errors.RevisionNotFoundError: 404 Client Error. (Request ID: Root=1-abc)\n"
       "Revision Not Found for url: https://huggingface.co/api/models/org/model/revision/v9.",
       "model_path_not_found"},
      {"huggingface/text-generation-inference server/text_generation_server/utils/hub.py",
       "FileNotFoundError: File model.safetensors of model org/model not found in /data. Please run "
       "`text-generation-server download-weights org/model` first.",
       "model_path_not_found"},
      {"ggml-org/llama.cpp ggml/src/gguf.cpp gguf_init_from_file (no errno)",
       "gguf_init_from_file: failed to open GGUF file '/models/qwen2.5-7b-q4_k_m.gguf'\n"
       "llama_model_load: error loading model: llama_model_loader: failed to load model from "
       "/models/qwen2.5-7b-q4_k_m.gguf\n"
       "llama_model_load_from_file_impl: failed to load model",
       "model_path_not_found"},
      {"golang os.Open via ollama/ollama server/images.go",
       "Error: open /root/.ollama/models/blobs/sha256-6a0746a1ec1aef3e7ec53868f220ff6e389f6f8ef87a01d7"
       "7c96807de94ca2aa: no such file or directory",
       "model_path_not_found"},
      {"CPython on Windows (WinError 3) for a model directory",
       "FileNotFoundError: [WinError 3] The system cannot find the path specified: "
       "'C:\\\\Users\\\\me\\\\models\\\\Qwen2.5-7B'",
       "model_path_not_found"},
      {"CPython on Windows (WinError 2) for a CUDA directory: not a model path",
       "FileNotFoundError: [WinError 2] The system cannot find the file specified: "
       "'C:\\\\Program Files\\\\NVIDIA GPU Computing Toolkit\\\\CUDA\\\\v12.1\\\\bin'",
       "unknown"},
      {"pytorch/pytorch torch/serialization.py (torch.load of a missing file)",
       "FileNotFoundError: [Errno 2] No such file or directory: '/data/llama-7b/pytorch_model.bin'",
       "model_path_not_found"},
      {"google/sentencepiece python/src/sentencepiece/__init__.py",
       "Traceback (most recent call last):\n"
       "  File \"/x/transformers/models/llama/tokenization_llama.py\", line 198, in get_spm_processor\n"
       "    tokenizer.Load(self.vocab_file)\n"
       "  File \"/x/sentencepiece/__init__.py\", line 961, in Load\n"
       "    return self.LoadFromFile(model_file)\n"
       "  File \"/x/sentencepiece/__init__.py\", line 316, in LoadFromFile\n"
       "    return _sentencepiece.SentencePieceProcessor_LoadFromFile(self, arg)\n"
       "TypeError: not a string",
       "config_or_tokenizer_error"},
      {"huggingface/transformers src/transformers/tokenization_utils.py",
       "ValueError: Non-consecutive added token '<|im_end|>' found. Should have index 151646 but has "
       "index 151645 in saved vocabulary.",
       "config_or_tokenizer_error"},
      {"huggingface/transformers models/llama/modeling_llama.py (4.3x _init_rope)",
       "ValueError: Unknown RoPE scaling type longrope", "config_or_tokenizer_error"},
      // ---------------------------------------------------------- environment
      {"NVIDIA cuDNN loader on Windows",
       "Could not locate cudnn_ops_infer64_8.dll. Please make sure it is in your library path!",
       "shared_lib_undefined_symbol"},
      {"vllm-project/vllm vllm/config.py ModelConfig._verify_quantization",
       "ValueError: bitsandbytes quantization is currently not supported in rocm.",
       "unsupported_gpu_arch_runtime"},
      {"facebookresearch/xformers xformers/ops/fmha/dispatch.py",
       "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:\n"
       "`cutlassF` is not supported because:\n"
       "    requires device with capability > (8, 0) but your GPU has capability (7, 5) (too old)",
       "unsupported_gpu_arch_runtime"},
      {"InternLM/lmdeploy lmdeploy/lite/utils/load.py",
       "RuntimeError: Your device does not supports bf16(bfloat16), please change to fp16(float16)",
       "unsupported_gpu_arch_runtime"},
      {"rust std io::ErrorKind via text-generation-inference router/src/server.rs",
       "thread 'main' panicked at 'called `Result::unwrap()` on an `Err` value: Os { code: 98, kind: "
       "AddrInUse, message: \"Address already in use\" }', router/src/server.rs:1171:10",
       "port_in_use"},
      {"encode/uvicorn uvicorn/server.py (errno 13: a privileged port, not a taken one)",
       "ERROR:    [Errno 13] error while attempting to bind on address ('0.0.0.0', 80): permission denied",
       "unknown"},
      {"encode/uvicorn uvicorn/server.py (errno 98)",
       "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already "
       "in use",
       "port_in_use"},
      {"golang net (Windows WSAEADDRINUSE) via ollama",
       "Error: listen tcp 127.0.0.1:11434: bind: Only one usage of each socket address "
       "(protocol/network address/port) is normally permitted.",
       "port_in_use"},
      {"NVIDIA/nccl src/init.cc ncclGetErrorString (a line of its own)",
       "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275,\n"
       "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5",
       "nccl_rccl_init_failure"},
      {"NVIDIA/nccl ncclRemoteError",
       "RuntimeError: ncclRemoteError: A call failed possibly due to a network error or a remote process "
       "exiting prematurely.",
       "nccl_rccl_init_failure"},
      {"glibc elf/dl-version.c",
       "ImportError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by "
       "/x/vllm/_C.abi3.so)",
       "shared_lib_undefined_symbol"},
      {"glibc elf/dl-version.c (a library's own version set)",
       "OSError: /x/libtorch_cuda.so: version `libcudart.so.12' not found (required by /x/libfoo.so)",
       "shared_lib_undefined_symbol"},
      {"glibc dl-load.c",
       "OSError: /x/lib/libggml-hip.so: wrong ELF class: ELFCLASS32", "shared_lib_undefined_symbol"},
      {"pytorch/pytorch aten/src/ATen/DynamicLibrary.cpp",
       "RuntimeError: Error in dlopen for library libnvrtc.so.12and libnvrtc-b51b459d.so.12",
       "shared_lib_undefined_symbol"},
      {"NVIDIA NVRTC (torch JIT)",
       "RuntimeError: nvrtc: error: failed to open libnvrtc-builtins.so.12.1.\n"
       "  Make sure that libnvrtc-builtins.so.12.1 is installed correctly.",
       "shared_lib_undefined_symbol"},
      {"triton-lang/triton python/triton/backends/nvidia/driver.py",
       "AssertionError: libcuda.so cannot found!", "shared_lib_undefined_symbol"},
      {"pytorch/pytorch aten/src/ATen/core/dispatch (an extension namespace)",
       "NotImplementedError: Could not run 'sgl_kernel::rmsnorm' with arguments from the 'CUDA' backend. "
       "This could be because the operator doesn't exist for this backend",
       "missing_custom_op"},
      {"pytorch/pytorch aten/src/ATen/core/dispatch (aten: a CPU-only torch)",
       "NotImplementedError: Could not run 'aten::empty_strided' with arguments from the 'CUDA' backend. "
       "This could be because the operator doesn't exist for this backend",
       "wrong_platform_build"},
      {"sgl-project/sglang (sgl_kernel missing)",
       "ModuleNotFoundError: No module named 'sgl_kernel'", "missing_custom_op"},
      {"pytorch/pytorch torch/serialization.py (twelfth round: a CPU-only torch, no device visible or a CPU "
       "machine alike, so `unknown`; was wrong_platform_build)",
       "RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
       "is False. If you are running on a CPU-only machine, please use torch.load with "
       "map_location=torch.device('cpu') to map your storages to the CPU.",
       "unknown"},
      {"pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp broadcastUniqueNCCLID",
       "torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving "
       "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: "
       "Connection reset by peer",
       "nccl_rccl_init_failure"},
      {"pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
       "RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!",
       "unknown"},  // no device visible: not a build for another platform
      // Device not visible (seventh rules round): the corpus labels these
      // `unknown`; the CUDA wording on a host the log shows is ROCm is a CUDA
      // build there.
      {"pytorch/pytorch torch/cuda/__init__.py _lazy_init (HIP build)",
       "  File \"/opt/venv/lib/python3.10/site-packages/torch/cuda/__init__.py\", line 247, in _lazy_init\n"
       "    torch._C._cuda_init()\n"
       "RuntimeError: No HIP GPUs are available",
       "unknown"},
      {"ROCm/clr hipamd/src/hip_error.cpp (hipErrorNoDevice)",
       "RuntimeError: HIP error: no ROCm-capable device is detected\n"
       "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
       "might be incorrect.",
       "unknown"},
      {"pytorch/pytorch torch/cuda/__init__.py _lazy_init (CUDA build, no device)",
       "RuntimeError: No CUDA GPUs are available",
       "unknown"},
      {"pytorch/pytorch torch/cuda/__init__.py _lazy_init (CUDA build on a ROCm host)",
       "INFO: ROCm 6.2.0 detected on /opt/rocm, gfx90a\n"
       "RuntimeError: No CUDA GPUs are available",
       "wrong_platform_build"},
      {"NVIDIA cudart cudaErrorNoDevice text (CUDA build on a Hygon DCU host)",
       "hy-smi: DCU 0 Hygon Z100 dtk-24.04\n"
       "ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device is detected",
       "wrong_platform_build"},
      // ------------------------------------------------- device and kernels
      {"ROCm/clr hipamd/src/hip_code_object.cpp",
       ":1:hip_code_object.cpp :507 : 123 us: Missing CO for these ISAs - \n"
       ":1:hip_code_object.cpp :510 : 124 us:      amdgcn-amd-amdhsa--gfx1151",
       "hip_invalid_device_function"},
      {"ROCm/clr hipamd/src/hip_error.cpp (hipErrorNoBinaryForGpu's text)",
       "RuntimeError: HIP error: no kernel image is available for execution on the device",
       "hip_invalid_device_function"},
      {"cudart cudaErrorNoKernelImageForDevice",
       "RuntimeError: CUDA error: no kernel image is available for execution on the device",
       "unsupported_gpu_arch_runtime"},
      {"ROCm/clr rocclr/device/rocm/rocvirtual.cpp",
       ":0:rocdevice.cpp :2614: 1234 us: 42 : [tid:0x7f] Device::callbackQueue aborting with error : "
       "HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. code: 0x1016",
       "hip_runtime_error"},
      {"torvalds/linux drivers/gpu/drm/amd/amdgpu/gmc_v9_0.c (dmesg pasted with the log)",
       "[ 4211.301] amdgpu 0000:c3:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 ring:24 "
       "vmid:3 pasid:32777, for process python3 pid 2424 thread python3 pid 2425)\n"
       "[ 4211.301] amdgpu 0000:c3:00.0: amdgpu:   in page starting at address 0x0000800102800000 from "
       "IH client 0x1b (UTCL2)",
       "hip_runtime_error"},
      {"torvalds/linux amdgpu: a driver that never came up (not a runtime fault)",
       "[   77.509808] [drm] psp command failed and response status is (0xF)\n"
       "[   77.512201] amdgpu 0000:03:00.0: [gfxhub0] no-retry page fault (src_id:0 ring:221 vmid:0 pasid:0)",
       "unknown"},
      {"triton-lang/triton python/triton/language/semantic.py",
       "ValueError: type fp8e4b8 not supported in this architecture. The supported fp8 dtypes are "
       "('fp8e5',)",
       "triton_unsupported_gpu_target"},
      {"NVIDIA ptxas under triton (triton/backends/nvidia/compiler.py make_cubin)",
       "  File \"/x/triton/backends/nvidia/compiler.py\", line 408, in make_cubin\n"
       "    raise PTXASError(f\"{error}\\n\"\n"
       "triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error\n"
       "`ptxas` stderr:\n"
       "ptxas fatal   : Value 'sm_103a' is not defined for option 'gpu-name'",
       "triton_unsupported_gpu_target"},
      {"NVIDIA ptxas under nvcc (a JIT-built extension)",
       "ptxas fatal   : Value 'sm_120' is not defined for option 'gpu-name'\n"
       "ninja: build stopped: subcommand failed.",
       "unsupported_gpu_arch_runtime"},
      {"llvm/llvm-project mlir/lib/Pass/PassManager (under triton)",
       "error: Failures have been detected while processing an MLIR pass pipeline",
       "triton_kernel_compile_failure"},
      {"triton-lang/triton python/triton/compiler/errors.py",
       "triton.compiler.errors.CompileTimeAssertionFailure: at 24:4:\n"
       "    tl.static_assert(BLOCK_K % 16 == 0)",
       "triton_kernel_compile_failure"},
      {"llvm/llvm-project MLIR verifier on a triton-dialect op",
       "/x/vllm/attention/ops/triton_decode_attention.py:88:20: error: 'tt.dot' op expected the "
       "operands to have the same element type",
       "triton_kernel_compile_failure"},
      {"ROCm/rocBLAS library/src/tensile_host.cpp",
       "rocBLAS error: Could not initialize Tensile library", "rocm_library_missing_arch"},
      {"ROCm/hipBLASLt tensile_host.cpp (then torch's call fails)",
       "rocblaslt error: Cannot read /x/torch/lib/hipblaslt/library/TensileLibrary_lazy_gfx1151.dat: "
       "No such file or directory\n"
       "RuntimeError: HIPBLAS_STATUS_INVALID_VALUE when calling `hipblasLtMatmulAlgoGetHeuristic( ...)`",
       "rocm_library_missing_arch"},
      {"ROCm/hipBLASLt tensile_host.cpp (a caller that falls back and serves)",
       "rocblaslt error: Cannot read \"TensileLibrary_lazy_gfx1201.dat\": No such file or directory\n"
       "time=2025-06-01T10:00:05.000Z level=INFO source=server.go:1 msg=\"llama runner started in 5.02 seconds\"",
       "unknown"},
      // ---------------------- more source templates (2026-12-05): HIP and ROCm
      {"ggml-org/llama.cpp ggml/src/ggml-cuda/common.cuh (HIP build, hipErrorNoBinaryForGpu)",
       "ggml_cuda_compute_forward: RMS_NORM failed\n"
       "ROCm error: no kernel image is available for execution on the device\n"
       "  current device: 0, in function ggml_cuda_compute_forward at /x/ggml/src/ggml-cuda/ggml-cuda.cu:2368\n"
       "  err\n"
       "/x/ggml/src/ggml-cuda/ggml-cuda.cu:75: ROCm error",
       "hip_invalid_device_function"},
      {"ggml-org/llama.cpp ggml/src/ggml-cuda/common.cuh (HIP build, hipErrorInvalidDeviceFunction)",
       "ROCm error: invalid device function\n"
       "  current device: 0, in function ggml_cuda_op_mul_mat at /x/ggml/src/ggml-cuda/ggml-cuda.cu:1602",
       "hip_invalid_device_function"},
      {"pytorch/pytorch c10/hip (torch.AcceleratorError) with ROCm/clr hip_error.cpp's text",
       "torch.AcceleratorError: HIP error: invalid device function\n"
       "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace "
       "below might be incorrect.\n"
       "For debugging consider passing AMD_SERIALIZE_KERNEL=3\n"
       "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions.",
       "hip_invalid_device_function"},
      {"ggml-org/llama.cpp ggml/src/ggml-cuda/common.cuh (HIP build, hipErrorIllegalAddress)",
       "ROCm error: an illegal memory access was encountered\n"
       "  current device: 0, in function ggml_backend_cuda_synchronize at /x/ggml/src/ggml-cuda/ggml-cuda.cu:2446\n"
       "  hipStreamSynchronize(cuda_ctx->stream())",
       "hip_runtime_error"},
      {"ggml-org/llama.cpp ggml/src/ggml-cuda/common.cuh (HIP build, hipErrorLaunchFailure)",
       "ROCm error: unspecified launch failure\n"
       "  current device: 1, in function ggml_cuda_mul_mat_q at /x/ggml/src/ggml-cuda/mmq.cu:120",
       "hip_runtime_error"},
      {"ggml-org/llama.cpp ggml/src/ggml-cuda/common.cuh (HIP build, out of memory: not a fault)",
       "ROCm error: out of memory\n"
       "  current device: 0, in function alloc at /x/ggml/src/ggml-cuda/ggml-cuda.cu:390",
       "cuda_oom_model_load"},
      {"torvalds/linux drivers/gpu/drm/amd/amdgpu/gmc_v8_0.c (dmesg pasted with the log)",
       "[ 812.1] amdgpu 0000:03:00.0: amdgpu: GPU fault detected: 146 0x0000480c for process python pid "
       "2424 thread python pid 2424\n"
       "[ 812.1] amdgpu 0000:03:00.0: amdgpu:   VM_CONTEXT1_PROTECTION_FAULT_ADDR   0x00001000",
       "hip_runtime_error"},
      {"ROCm/rocBLAS library/src/tensile_host.cpp (no code objects for the arch)",
       "rocBLAS warning: No paths matched /opt/rocm/lib/rocblas/library/*gfx1103*co. Make sure that "
       "ROCBLAS_TENSILE_LIBPATH is set correctly.\n"
       "Aborted (core dumped)",
       "rocm_library_missing_arch"},
      {"ROCm/hipBLASLt tensile_host.cpp (no code objects, the caller falls back and serves)",
       "rocblaslt warning: No paths matched /opt/rocm/lib/hipblaslt/library/*gfx1030*co. Make sure that "
       "HIPBLASLT_TENSILE_LIBPATH is set correctly.\n"
       "INFO:     Application startup complete.",
       "unknown"},
      {"libdrm amdgpu_asic_id.c (a missing amdgpu.ids: a warning, the launch goes on)",
       "/opt/amdgpu/share/libdrm/amdgpu.ids: No such file or directory\n"
       "INFO 06-01 10:00:00 [gpu_worker.py:1] Available KV cache memory: 20.5 GiB\n"
       "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
       "unknown"},
      // ---------------------------- more source templates (2026-12-05): custom ops
      {"vllm-project/vllm vllm/vllm_flash_attn/__init__.py (a build without its FA kernels)",
       "ModuleNotFoundError: No module named 'vllm.vllm_flash_attn._vllm_fa2_C'",
       "missing_custom_op"},
      {"pytorch/vision torchvision/extension.py _assert_has_ops",
       "RuntimeError: Couldn't load custom C++ ops. This can happen if your PyTorch and torchvision "
       "versions are incompatible, or if you had errors while compiling torchvision from source. For "
       "further information on the compatible versions, check https://github.com/pytorch/vision#installation",
       "missing_custom_op"},
      {"huggingface/text-generation-inference server/text_generation_server/layers/attention/cuda.py",
       "ImportError: Could not import vllm paged attention. Make sure your installation is correct. "
       "Complete error: No module named 'vllm._C'",
       "missing_custom_op"},
      {"huggingface/text-generation-inference (the wrapped error is the loader's)",
       "ImportError: Could not import vllm paged attention. Make sure your installation is correct. "
       "Complete error: /x/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi",
       "shared_lib_undefined_symbol"},
      {"huggingface/text-generation-inference server/text_generation_server/utils/flash_attn.py",
       "ImportError: Flash Attention V2 is not installed.\n"
       "Use the official Docker image (ghcr.io/huggingface/text-generation-inference:latest) or install "
       "flash attention v2 with `cd server && make install install-flash-attention-v2-cuda`",
       "missing_custom_op"},
      {"sgl-project/sglang sgl-kernel/python/sgl_kernel/load_utils.py (no common_ops at all)",
       "ImportError: \n"
       "[sgl_kernel] CRITICAL: Could not load any common_ops library!\n"
       "\n"
       "Attempted locations:\n"
       "1. Architecture-specific pattern: /x/sgl_kernel/sm100/common_ops.* - found files: []\n"
       "2. Fallback pattern: /x/sgl_kernel/common_ops.* - found files: []\n"
       "3. Standard Python import: common_ops - failed",
       "missing_custom_op"},
      // ------------------- more source templates (2026-12-05): paths, NCCL, heads
      {"NVIDIA/nccl src/init.cc ncclGetErrorString (ncclInvalidArgument)",
       "RuntimeError: NCCL error: invalid argument (run with NCCL_DEBUG=WARN for details)",
       "nccl_rccl_init_failure"},
      {"huggingface/huggingface_hub src/huggingface_hub/_snapshot_download.py (offline)",
       "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find an appropriate cached snapshot "
       "folder for the specified revision on the local disk and outgoing traffic has been disabled. To "
       "enable repo look-ups and downloads online, pass 'local_files_only=False' as input.",
       "model_path_not_found"},
      {"huggingface/huggingface_hub src/huggingface_hub/_snapshot_download.py (hub unreachable, re-raised)",
       "ValueError: An error happened while trying to locate the files on the Hub and we cannot find "
       "the appropriate snapshot folder for the specified revision on the local disk. Please check your "
       "internet connection and try again.",
       "model_path_not_found"},
      {"vllm-project/vllm vllm/transformers_utils/config.py get_config",
       "ValueError: Could not detect config format for no config file found. With config_format "
       "'auto', ensure your model has either config.json (HF format) or params.json (Mistral format). "
       "Otherwise please specify your_custom_config_format in engine args for customized config parsing.",
       "model_path_not_found"},
      {"Dao-AILab/flash-attention flash_attn/flash_attn_triton.py",
       "AssertionError: FlashAttention only support head dimensions up to 128",
       "unsupported_head_size"},
      // ------------------ more source templates (2026-12-05): arch, platform, NCCL
      {"Dao-AILab/flash-attention hopper/flash_api.cpp (FA3 on a pre-Hopper card)",
       "RuntimeError: FlashAttention only supports Hopper GPUs or newer.",
       "unsupported_gpu_arch_runtime"},
      {"NVIDIA cuBLAS cublas_api.h CUBLAS_STATUS_ARCH_MISMATCH via torch",
       "RuntimeError: CUDA error: CUBLAS_STATUS_ARCH_MISMATCH when calling `cublasGemmEx( handle, opa, "
       "opb, m, n, k, &falpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &fbeta, c, CUDA_R_16BF, ldc, "
       "CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`",
       "unsupported_gpu_arch_runtime"},
      {"pytorch/pytorch c10/core/Device.cpp (vLLM's UnspecifiedPlatform device type)",
       "Traceback (most recent call last):\n"
       "  File \"/x/vllm/engine/arg_utils.py\", line 1000, in create_engine_config\n"
       "    device_config = DeviceConfig(device=self.device)\n"
       "RuntimeError: Device string must not be empty",
       "wrong_platform_build"},
      {"vllm-project/vllm vllm/distributed/device_communicators/pynccl_wrapper.py",
       "ERROR 06-01 10:00:00 [pynccl_wrapper.py:300] Failed to load NCCL library from libnccl.so.2. It "
       "is expected if you are not running on NVIDIA/AMD GPUs. Otherwise, the nccl library might not "
       "exist, be corrupted or it does not support the current platform Linux-5.15. If you already have "
       "the library, please set the environment variable VLLM_NCCL_SO_PATH to point to the correct nccl "
       "library path.",
       "nccl_rccl_init_failure"},
      {"huggingface/huggingface_hub src/huggingface_hub/utils/_validators.py validate_repo_id",
       "huggingface_hub.errors.HFValidationError: Cannot have -- or .. in repo_id: '../models/Qwen2-7B'.",
       "model_path_not_found"},
      // ------------------ rules from sources, again (2026-12-05): memory, config
      {"ggml-org/llama.cpp ggml/src/ggml.c ggml_aligned_malloc",
       "ggml_aligned_malloc: insufficient memory (attempted to allocate 24576.00 MB)\n"
       "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 25769803776\n"
       "llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache",
       "max_model_len_exceeds_kv_capacity"},
      {"ggml-org/llama.cpp ggml/src/ggml.c ggml_aligned_malloc (the weights)",
       "ggml_aligned_malloc: insufficient memory (attempted to allocate 60438.47 MB)\n"
       "llama_model_load: error loading model: unable to allocate CPU buffer\n"
       "llama_model_load_from_file_impl: failed to load model",
       "cuda_oom_model_load"},
      {"ggml-org/llama.cpp src/llama-model.cpp load_tensors (a host buffer type)",
       "llama_model_load: error loading model: unable to allocate CUDA_Host buffer",
       "cuda_oom_model_load"},
      {"huggingface/transformers src/transformers/quantizers/quantizer_bnb_4bit.py",
       "ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU RAM "
       "to fit the quantized model. If you want to dispatch the model on the CPU or the disk while keeping "
       "these modules in 32-bit, you need to set `llm_int8_enable_fp32_cpu_offload=True` and pass a custom "
       "`device_map` to `from_pretrained`.",
       "cuda_oom_model_load"},
      // Seventeenth rules round: the kernel's OOM killer is a host-memory
      // kill, not an allocation the loader was refused (the corpus labels
      // it `unknown`); this row was cuda_oom_model_load until then.
      {"torvalds/linux mm/oom_kill.c (dmesg pasted with the log)",
       "Loading safetensors checkpoint shards:  60% Completed | 3/5\n"
       "[ 9912.004] Out of memory: Killed process 4242 (python3) total-vm:98765432kB, anon-rss:61234567kB, "
       "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:123456kB oom_score_adj:0",
       "unknown"},
      {"torvalds/linux mm/memcontrol.c + mm/oom_kill.c (a cgroup limit)",
       "Memory cgroup out of memory: Killed process 811 (python3) total-vm:40000000kB, anon-rss:30000000kB",
       "unknown"},
      {"ollama/ollama cmd/cmd.go RunHandler (Show again after a pull that went through)",
       "pulling manifest\n"
       "pulling 6a0746a1ec1a... 100% 4.7 GB\n"
       "verifying sha256 digest\n"
       "Error: model 'qwen2:7b' not found",
       "unknown"},
      {"ollama/ollama cmd/cmd.go PullHandler (the registry does not know the name)",
       "pulling manifest\n"
       "Error: pull model manifest: file does not exist",
       "model_path_not_found"},
      {"google/sentencepiece src/sentencepiece_processor.cc (Load)",
       "RuntimeError: Internal: src/sentencepiece_processor.cc(1101) "
       "[model_proto->ParseFromArray(serialized.data(), serialized.size())]",
       "config_or_tokenizer_error"},
      {"huggingface/transformers src/transformers/convert_slow_tokenizer.py",
       "ValueError: Converting from Tiktoken failed, if a converter for SentencePiece is available, provide "
       "a model path with a SentencePiece tokenizer.model file.Currently available slow->fast converters: "
       "['AlbertTokenizer', 'BartTokenizer']",
       // Fifteenth rules round: a control now (a missing package and files
       // that cannot be converted print it alike).
       "unknown"},
      {"huggingface/transformers src/transformers/tokenization_utils_fast.py (twelfth round: sentencepiece, an "
       "optional package, not installed; was config_or_tokenizer_error)",
       "ValueError: Cannot instantiate this tokenizer from a slow version. If it's based on sentencepiece, "
       "make sure you have sentencepiece installed.",
       "unknown"},
      // -------------- rules from sources, again (2026-12-05): model path, arch
      {"huggingface/transformers src/transformers/utils/hub.py cached_files (GatedRepoError)",
       "OSError: You are trying to access a gated repo.\n"
       "Make sure to have access to it at https://huggingface.co/org/gated-model.\n"
       "401 Client Error. (Request ID: Root=1-abc;def)",
       "model_path_not_found"},
      {"huggingface/huggingface_hub (the hub's gate text, re-raised alone)",
       "RuntimeError: 403 Forbidden: Access to model org/gated-model is restricted and you are not in the "
       "authorized list.",
       "model_path_not_found"},
      {"huggingface/transformers src/transformers/modeling_utils.py (no weights in the directory)",
       "OSError: /data/models/qwen does not appear to have a file named pytorch_model.bin, "
       "model.safetensors, tf_model.h5, model.ckpt or flax_model.msgpack.",
       "model_path_not_found"},
      {"psf/requests HTTPError for the hub's API (no token)",
       "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
       "https://huggingface.co/api/models/org/model/revision/main",
       "model_path_not_found"},
      {"modelscope/modelscope modelscope/hub/errors.py handle_http_response",
       "ERROR - Authentication token does not exist, failed to access model org/model which may not exist "
       "or may be private. Please login first.\n"
       "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: "
       "https://www.modelscope.cn/api/v1/models/org/model/revisions",
       "model_path_not_found"},
      {"vllm-project/vllm vllm/model_executor/models/registry.py _raise_for_unsupported (dropped)",
       "ValueError: Model architecture MPTForCausalLM was supported in vLLM until v0.10.2, and is not "
       "supported anymore. Please use an older version of vLLM if you want to use this model architecture.",
       "unsupported_model_architecture"},
      {"vllm-project/vllm vllm/model_executor/models/registry.py _try_resolve_transformers",
       "ValueError: The Transformers implementation of 'FooForCausalLM' is not compatible with vLLM.",
       "unsupported_model_architecture"},
      {"ollama/ollama model/model.go New (the Ollama engine)",
       "time=2025-06-01T10:00:00.000Z level=ERROR source=server.go:1 msg=\"llama runner terminated\" "
       "error=\"unsupported model architecture \\\"qwen3next\\\"\"",
       "unsupported_model_architecture"},
      {"ollama/ollama convert/convert.go LoadModelMetadata (ollama create)",
       "converting model\nError: unsupported architecture \"Glm4vForConditionalGeneration\"",
       "unsupported_model_architecture"},
      {"a Go program refusing a CPU architecture (not a model's)",
       "Error: unsupported architecture \"riscv64\"", "unknown"},
      {"ollama/ollama llm/server.go (debug: only a switch to the llama.cpp runner)",
       "time=2025-06-01T10:00:00.000Z level=DEBUG source=server.go:1 msg=\"model not yet supported by "
       "Ollama engine, switching to compatibility mode\" model=/x/blobs/sha256-1 error=\"unsupported model "
       "architecture \\\"qwen2\\\"\"\n"
       "time=2025-06-01T10:00:05.000Z level=INFO source=server.go:1 msg=\"llama runner started in 2.01 seconds\"",
       "unknown"},
      // ------------ rules from sources, again (2026-12-05): device, NCCL, triton
      {"ROCm/clr hipamd/src/hip_error.cpp (hipErrorInvalidImage) via torch",
       "RuntimeError: HIP error: device kernel image is invalid\n"
       "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace "
       "below might be incorrect.",
       "hip_invalid_device_function"},
      {"ROCm/clr hipamd/src/hip_error.cpp (hipErrorInvalidImage by name)",
       "hipModuleLoadData failed: hipErrorInvalidImage", "hip_invalid_device_function"},
      {"pytorch/pytorch aten/src/ATen/native/cuda/Blas.cpp (_scaled_mm)",
       "RuntimeError: torch._scaled_mm is only supported on CUDA devices with compute capability >= 9.0 "
       "or 8.9, or ROCm MI300+",
       "unsupported_gpu_arch_runtime"},
      {"vllm-project/vllm csrc/quantization/cutlass_w8a8/scaled_mm_entry.cu",
       "RuntimeError: cutlass_scaled_mm, csrc/quantization/cutlass_w8a8/scaled_mm_entry.cu:265,\n"
       "NotImplementedError: No compiled cutlass_scaled_mm for a compute capability less than CUDA device "
       "capability: 121",
       "unsupported_gpu_arch_runtime"},
      {"vllm-project/vllm csrc/quantization/cutlass_w8a8/scaled_mm_entry.cu (MoE)",
       "NotImplementedError: No compiled cutlass_scaled_mm for CUDA device capability: 80. Required "
       "capability: 90",
       "unsupported_gpu_arch_runtime"},
      {"vllm-project/vllm csrc/quantization/fp4/nvfp4_quant_entry.cu",
       "NotImplementedError: No compiled nvfp4 quantization kernel", "unsupported_gpu_arch_runtime"},
      {"ROCm/rocBLAS library/include/internal/rocblas-types.h (rocblas_status_arch_mismatch)",
       "RuntimeError: rocBLAS error: rocblas_status_arch_mismatch when calling `rocblas_gemm_ex(...)`",
       "unsupported_gpu_arch_runtime"},
      {"pytorch/pytorch torch/amp/autocast_mode.py",
       "RuntimeError: Current CUDA Device does not support bfloat16. Please switch dtype to float16.",
       "unsupported_gpu_arch_runtime"},
      {"pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (watchdog)",
       "[rank1]:[E1204 10:00:00.000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective "
       "operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
       "ran for 600041 milliseconds before timing out.",
       "nccl_rccl_init_failure"},
      {"pytorch/pytorch ProcessGroupNCCL.cpp (abort after another rank's OOM: the OOM is the cause)",
       "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
       "capacity of 23.64 GiB of which 1.06 GiB is free.\n"
       "[rank0]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 0.",
       "cuda_oom_model_load"},
      {"llvm/llvm-project llvm/lib/MC/MCSubtargetInfo.cpp via triton",
       "'gfx1150' is not a recognized processor for this target (ignoring processor)\n"
       "  File \"/x/triton/compiler/compiler.py\", line 300, in compile\n"
       "    next_module = compile_ir(module, metadata)\n"
       "RuntimeError: PassManager::run failed",
       "triton_unsupported_gpu_target"},
      {"llvm/llvm-project MCSubtargetInfo.cpp for a CPU name (numba/llvmlite): no GPU target",
       "'znver5' is not a recognized processor for this target (ignoring processor)\n"
       "INFO:     Application startup complete.",
       "unknown"},
      {"triton-lang/triton python/triton/runtime/build.py (triton <= 3.0, <tmpdir>/main.c)",
       "subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmpq1w2e3/main.c', '-O3', "
       "'-I/x/triton/common/../third_party/cuda/include', '-I/usr/include/python3.10', '-I/tmp/tmpq1w2e3', "
       "'-shared', '-fPIC', '-lcuda', '-o', '/tmp/tmpq1w2e3/_fwd_kernel.cpython-310-x86_64-linux-gnu.so']' "
       "returned non-zero exit status 1.",
       "triton_kernel_compile_failure"},
      // ------------------------- round: rules from sources, a fourth time
      {"ROCm/clr hipamd/src/hip_error.cpp (hipErrorInvalidKernelFile's text) via torch",
       "RuntimeError: HIP error: invalid kernel file\n"
       "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace "
       "below might be incorrect.\n"
       "For debugging consider passing AMD_SERIALIZE_KERNEL=3",
       "hip_invalid_device_function"},
      {"ROCm/clr hipamd/src/hip_error.cpp (hipErrorInvalidKernelFile by name, a library's check)",
       "RuntimeError: hipModuleLoad(&module, \"/x/kernels/moe_dispatch.hsaco\") failed: "
       "hipErrorInvalidKernelFile",
       "hip_invalid_device_function"},
      {"triton-lang/triton third_party/amd/backend/driver.c (hipErrorNoBinaryForGpu's text)",
       "  File \"/x/triton/backends/amd/driver.py\", line 479, in __call__\n"
       "    self.launch(*args, **kwargs)\n"
       "RuntimeError: Triton Error [HIP]:  Code: 209, Messsage: no kernel image is available for "
       "execution on the device",
       "hip_invalid_device_function"},
      {"triton-lang/triton third_party/amd/backend/driver.c (newer 'Message', invalid kernel file)",
       "RuntimeError: Triton Error [HIP]: Code: 218, Message: invalid kernel file",
       "hip_invalid_device_function"},
      {"ROCm/clr rocclr/device/devprogram.cpp (AMD_LOG_LEVEL=1)",
       ":1:devprogram.cpp           :1873: 99887766 us: 4242: [tid:0x7f00aa11bb22] Error: The program "
       "ISA amdgcn-amd-amdhsa--gfx1030 is not compatible with the device ISA "
       "amdgcn-amd-amdhsa--gfx1031Error: create kernel metadata map using COMgr\n"
       "Error: Cannot create kernels.",
       "hip_invalid_device_function"},
      {"ROCm/ROCR-Runtime runtime/hsa-runtime/core/runtime/runtime.cpp (VMFaultHandler)",
       "INFO 06-01 10:00:00 [model_runner.py:1] Loading model weights took 14.9 GiB\n"
       "Memory critical error by agent node-0 (Agent handle: 0x5a5a1234) on address 0x7f0012345000. "
       "Reason: Memory in use.\n"
       "Aborted (core dumped)",
       "hip_runtime_error"},
      {"triton-lang/triton third_party/nvidia/backend/driver.c (cuGetErrorString: out of memory)",
       "RuntimeError: Triton Error [CUDA]: out of memory", "cuda_oom_model_load"},
      {"triton-lang/triton third_party/amd/backend/driver.c (hipErrorOutOfMemory's text)",
       "RuntimeError: Triton Error [HIP]:  Code: 2, Messsage: out of memory", "cuda_oom_model_load"},
      {"InternLM/lmdeploy lmdeploy/turbomind/__init__.py (newer: from . import _turbomind)",
       "ModuleNotFoundError: No module named 'lmdeploy.turbomind._turbomind'", "missing_custom_op"},
      {"InternLM/lmdeploy lmdeploy/turbomind/__init__.py (the binding absent from the package)",
       "ImportError: cannot import name '_turbomind' from 'lmdeploy.turbomind' "
       "(/x/site-packages/lmdeploy/turbomind/__init__.py)",
       "missing_custom_op"},
      {"InternLM/lmdeploy lmdeploy/archs.py autoget_backend (a warning: it falls back and serves)",
       "lmdeploy - WARNING - archs.py:48 - Fallback to pytorch engine because turbomind engine is not "
       "installed correctly. If you insist to use turbomind engine, you may need to reinstall lmdeploy "
       "from pypi or build from source and try again.\n"
       "INFO:     Uvicorn running on http://0.0.0.0:23333 (Press CTRL+C to quit)",
       "unknown"},
      {"vllm-project/vllm-ascend (the compiled ops, raised)",
       "  File \"/x/vllm_ascend/worker/worker.py\", line 12, in <module>\n"
       "    import vllm_ascend.vllm_ascend_C  # noqa: F401\n"
       "ModuleNotFoundError: No module named 'vllm_ascend.vllm_ascend_C'",
       "missing_custom_op"},
      {"vllm-project/vllm-ascend vllm_ascend/device_allocator/camem.py (an ERROR line of a run that serves)",
       "ERROR 06-01 10:00:00 camem.py:69] Failed to import vllm_ascend_C:No module named "
       "'vllm_ascend.vllm_ascend_C'\n"
       "INFO 06-01 10:01:00 [api_server.py:1] Starting vLLM API server on http://0.0.0.0:8000\n"
       "INFO:     Application startup complete.",
       "unknown"},
      {"facebookresearch/xformers xformers/ops/fmha/common.py (a build without CUDA operators)",
       "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:\n"
       "     query       : shape=(1, 2048, 32, 128) (torch.float16)\n"
       "     key         : shape=(1, 2048, 32, 128) (torch.float16)\n"
       "     value       : shape=(1, 2048, 32, 128) (torch.float16)\n"
       "     attn_bias   : <class 'xformers.ops.fmha.attn_bias.BlockDiagonalCausalMask'>\n"
       "     p           : 0.0\n"
       "`flshattF@v2.5.6` is not supported because:\n"
       "    xFormers wasn't build with CUDA support\n"
       "    requires device with capability > (8, 0) but your GPU has capability (7, 0) (too old)\n"
       "`cutlassF` is not supported because:\n"
       "    xFormers wasn't build with CUDA support",
       "missing_custom_op"},
      {"facebookresearch/xformers (operators too new for the card, the build is sound)",
       "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:\n"
       "     query       : shape=(1, 2048, 32, 128) (torch.bfloat16)\n"
       "`flshattF@v2.5.6` is not supported because:\n"
       "    requires device with capability > (8, 0) but your GPU has capability (7, 5) (too old)\n"
       "    bf16 is only supported on A100+ GPUs",
       "unsupported_gpu_arch_runtime"},
      {"facebookresearch/xformers xformers/__init__.py (import warning; the run goes on)",
       "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
       "    PyTorch 2.3.0+cu121 with CUDA 1201 (you have 2.3.1+cu121)\n"
       "    Python  3.10.14 (you have 3.10.14)\n"
       "INFO:     Application startup complete.",
       "unknown"},
      {"sgl-project/sglang python/sglang/srt/utils.py get_device",
       "  File \"/x/sglang/srt/server_args.py\", line 300, in __post_init__\n"
       "    self.device = get_device()\n"
       "RuntimeError: No accelerator (CUDA, XPU, HPU) is available.",
       // Fifteenth rules round: a control now (a CPU-only torch and a device
       // the runtime cannot see print it alike: the stop-42 call).
       "unknown"},
      {"sgl-project/sglang python/sglang/srt/utils/common.py get_device (newer)",
       "RuntimeError: No accelerator (CUDA, XPU, HPU, NPU, MUSA, MPS) or platform plugin is available.",
       "unknown"},
      {"python/cpython Modules/_ctypes/callproc.c load_library (Windows)",
       "FileNotFoundError: Could not find module 'C:\\Users\\me\\venv\\Lib\\site-packages\\llama_cpp\\lib\\"
       "llama.dll' (or one of its dependencies). Try using the full path with constructor syntax.",
       "shared_lib_undefined_symbol"},
      {"abetlen/llama-cpp-python llama_cpp/_ctypes_extensions.py load_shared_library",
       "  File \"/x/llama_cpp/llama_cpp.py\", line 38, in <module>\n"
       "    _lib = load_shared_library(_lib_base_name, _base_path)\n"
       "FileNotFoundError: Shared library with base name 'llama' not found",
       "shared_lib_undefined_symbol"},
      {"glibc elf/dl-load.c (executable stack refused, glibc >= 2.41)",
       "ImportError: libctranslate2-0a1b2c3d.so.4.4.0: cannot enable executable stack as shared object "
       "requires: Invalid argument",
       "shared_lib_undefined_symbol"},
      {"vllm-project/vllm vllm/attention/utils/fa_utils.py (an ERROR line; vLLM picks another backend)",
       "ERROR 06-01 10:00:00 [fa_utils.py:57] Cannot use FA version 2 is not supported due to FA2 is "
       "only supported on devices with compute capability >= 8\n"
       "INFO 06-01 10:00:01 [cuda.py:1] Using XFormers backend.\n"
       "INFO:     Application startup complete.",
       "unknown"},
      {"InternLM/lmdeploy src/turbomind/models/llama/BlockManager.cc (no KV block fits)",
       "[TM][INFO] [BlockManager] block_size = 64 MB\n"
       "[TM][INFO] [BlockManager] max_block_count = 0\n"
       "[TM][INFO] [BlockManager] chunk_size = 0",
       "no_cache_blocks"},
      {"InternLM/lmdeploy src/turbomind/models/llama/BlockManager.cc (a healthy count)",
       "[TM][INFO] [BlockManager] block_size = 64 MB\n"
       "[TM][INFO] [BlockManager] max_block_count = 1024\n"
       "INFO:     Uvicorn running on http://0.0.0.0:23333 (Press CTRL+C to quit)",
       "unknown"},
      {"InternLM/lmdeploy lmdeploy/pytorch/check_env/cuda.py CudaChecker",
       "2025-06-01 10:00:00,000 - lmdeploy - ERROR - base.py:53 - <CUDA> check failed!\n"
       "cuda is not available.",
       "wrong_platform_build"},
      {"InternLM/lmdeploy lmdeploy/pytorch/check_env/cuda.py (fp8 on a pre-Hopper card)",
       "2025-06-01 10:00:00,000 - lmdeploy - ERROR - base.py:53 - <CUDA> check failed!\n"
       "model_format=fp8 requires sm>=9.0.",
       "unsupported_gpu_arch_runtime"},
      {"InternLM/lmdeploy lmdeploy/pytorch/check_env/deeplink.py",
       "2025-06-01 10:00:00,000 - lmdeploy - ERROR - base.py:51 - ModuleNotFoundError: No module named "
       "'dlinfer'\n"
       "2025-06-01 10:00:00,000 - lmdeploy - ERROR - base.py:53 - <dlinfer> check failed!\n"
       "dlinfer is not available.",
       "missing_custom_op"},
      {"huggingface/text-generation-inference models/__init__.py + utils/flash_attn.py (no CUDA)",
       "WARN text_generation_launcher: Could not import Flash Attention enabled models: CUDA is not "
       "available\n"
       "ERROR text_generation_launcher: Error when initializing model\n"
       "NotImplementedError: Sharded Llama requires Flash Attention enabled models.",
       "wrong_platform_build"},
      {"huggingface/text-generation-inference utils/flash_attn.py (no flash-attention kernel for the card)",
       "WARN text_generation_launcher: Could not import Flash Attention enabled models: GPU with CUDA "
       "capability 6 1 is not supported\n"
       "NotImplementedError: Sharded Llama requires Flash Attention enabled models.",
       "unsupported_gpu_arch_runtime"},
      {"huggingface/text-generation-inference utils/flash_attn.py (V2 refused, V1 used: a warning)",
       "WARN text_generation_launcher: Unable to use Flash Attention V2: GPU with CUDA capability 7 5 is "
       "not supported for Flash Attention V2\n"
       "INFO text_generation_router: Connected",
       "unknown"},
      {"huggingface/text-generation-inference utils/flash_attn.py attention()",
       "  File \"/x/text_generation_server/utils/flash_attn.py\", line 120, in attention\n"
       "    raise NotImplementedError(\"flash attention is not installed\")\n"
       "NotImplementedError: flash attention is not installed",
       "missing_custom_op"},
      {"vllm-project/vllm model_executor/layers/quantization/utils/marlin_utils_fp4.py (a warning)",
       "WARNING 06-01 10:00:00 [marlin_utils_fp4.py:1] Your GPU does not have native support for FP4 "
       "computation but FP4 quantization is being used. Weight-only FP4 compression will be used "
       "leveraging the Marlin kernel. This may degrade performance for compute-heavy workloads.\n"
       "INFO:     Application startup complete.",
       "unknown"},
      {"ROCm/composable_kernel include/ck/host_utility/hip_check_error.hpp (hipErrorNoBinaryForGpu)",
       "terminate called after throwing an instance of 'std::runtime_error'\n"
       "  what():  HIP Function Failed (/x/ck/host_utility/kernel_launch.hpp,77) no kernel image is "
       "available for execution on the device",
       "hip_invalid_device_function"},
      {"ROCm/composable_kernel hip_check_error.hpp (hipErrorIllegalAddress)",
       "RuntimeError: HIP Function Failed (/x/aiter/csrc/include/hip_compat.h,41) an illegal memory "
       "access was encountered",
       "hip_runtime_error"},
      {"ROCm/composable_kernel hip_check_error.hpp (hipErrorOutOfMemory)",
       "RuntimeError: HIP Function Failed (/x/ck/device_memory.cpp,12) out of memory",
       "cuda_oom_model_load"},
      {"huggingface/text-generation-inference models/__init__.py (flash-attention's csrc modules absent)",
       "WARN text_generation_launcher: Could not import Flash Attention enabled models: No module named "
       "'dropout_layer_norm'\n"
       "ERROR text_generation_launcher: Error when initializing model\n"
       "NotImplementedError: Sharded Llama requires Flash Attention enabled models.",
       "missing_custom_op"},
      {"huggingface/text-generation-inference custom_modeling/mamba_modeling.py",
       "  File \"/x/text_generation_server/models/custom_modeling/mamba_modeling.py\", line 5, in <module>\n"
       "    import selective_scan_cuda\n"
       "ModuleNotFoundError: No module named 'selective_scan_cuda'",
       "missing_custom_op"},
      {"flashinfer-ai/flashinfer absent under sgl-project/sglang (raised)",
       "  File \"/x/sglang/srt/layers/attention/flashinfer_backend.py\", line 30, in <module>\n"
       "    from flashinfer import BatchDecodeWithPagedKVCacheWrapper\n"
       "ModuleNotFoundError: No module named 'flashinfer'",
       "missing_custom_op"},
      {"sgl-project/sglang srt/models/registry.py (an optional model's import, logged; it serves)",
       "WARNING 06-01 10:00:00 Ignore import error when loading sglang.srt.models.foo: No module named "
       "'flashinfer'\n"
       "[2025-06-01 10:00:01] Load weight begin. avail mem=78.50 GB\n"
       "[2025-06-01 10:00:09] The server is fired up and ready to roll!",
       "unknown"},
      // ------------------------------- round: rules from sources, a fifth time
      {"pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp (a per-process memory fraction; str(e) only)",
       "!!! Exception during processing !!! Allocation on device 1 would exceed allowed memory. (out of "
       "memory)\n"
       "Currently allocated     : 11.20 GiB\n"
       "Requested               : 2.00 GiB\n"
       "Device limit            : 12.00 GiB",
       "cuda_oom_model_load"},
      {"vllm-project/vllm csrc/cumem_allocator.cpp CUDA_CHECK (sleep mode wake_up)",
       "  File \"/x/vllm/device_allocator/cumem.py\", line 80, in create_and_map\n"
       "    python_create_and_map(*allocation_handle)\n"
       "RuntimeError: CUDA Error: out of memory at /src/csrc/cumem_allocator.cpp:71",
       "cuda_oom_model_load"},
      {"NVIDIA/nccl src/include/checks.h CUDACHECK (its WARN as torch's NCCL error's last error)",
       "torch.distributed.DistBackendError: NCCL error in: /x/ProcessGroupNCCL.cpp:1970, unhandled cuda "
       "error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
       "ncclUnhandledCudaError: Call to CUDA function failed.\n"
       "Last error:\n"
       "Cuda failure 'out of memory'",
       "cuda_oom_model_load"},
      {"vllm-project/vllm vllm/config.py _get_and_verify_max_len (bare assert)",
       "  File \"/x/vllm/config.py\", line 1700, in _get_and_verify_max_len\n"
       "    assert \"factor\" in rope_scaling\n"
       "AssertionError",
       "config_or_tokenizer_error"},
      {"nomic-ai/gpt4all gpt4all-backend llmodel.h BadArchError (Python bindings)",
       "  File \"/x/gpt4all/_pyllmodel.py\", line 260, in __init__\n"
       "    raise RuntimeError(f\"Unable to instantiate model: {e}\")\n"
       "RuntimeError: Unable to instantiate model: Unsupported model architecture: t5",
       "unsupported_model_architecture"},
      {"ggml-org/llama.cpp src/llama-model.cpp load_hparams",
       "llama_model_load: error loading model: error loading model hyperparameters: unsupported model "
       "architecture: mamba3\n"
       "llama_load_model_from_file: failed to load model",
       "unsupported_model_architecture"},
      {"vllm-project/vllm vllm/model_executor/models/minicpmv.py (MiniCPMV.__new__)",
       "ValueError: Currently, MiniCPMV only supports versions 2.0, 2.5, 2.6, 4.0. Got version: (5, 0)",
       "unsupported_model_architecture"},
      {"ggml-org/llama.cpp ggml/src/gguf.cpp gguf_init_from_file (an empty model path)",
       "gguf_init_from_file: failed to open '': 'Invalid argument'\n"
       "llama_model_load: error loading model: llama_model_loader: failed to load model from \n"
       "llama_load_model_from_file: failed to load model",
       "model_path_not_found"},
      {"ggml-org/llama.cpp ggml/src/gguf.cpp gguf_init_from_file (a directory given as the model)",
       "gguf_init_from_file_impl: failed to open '/srv/models/qwen': 'Is a directory'",
       "model_path_not_found"},
      {"sgl-project/sglang python/sglang/srt/utils.py wait_port_available",
       "ValueError: rpc_port at 31005 is not available in 30 seconds. rpc_port is used by a process "
       "already. process.name()='python3' process.cmdline()=['python3', '-m', 'sglang.launch_server']",
       "port_in_use"},
      {"ggml-org/llama.cpp tools/server/server.cpp (a Unix socket path as the host)",
       "main: setting address family to AF_UNIX\n"
       "main: couldn't bind HTTP server socket, hostname: /run/llm/api.sock, port: 8080",
       "unknown"},
      {"ggml-org/llama.cpp tools/server/server.cpp (a TCP host: the port is taken)",
       "main: binding port with default address family\n"
       "main: couldn't bind HTTP server socket, hostname: 0.0.0.0, port: 8080",
       "port_in_use"},
      {"vllm-project/vllm vllm/_custom_ops.py (0.4.x, compiled ops absent)",
       "  File \"/x/vllm/_custom_ops.py\", line 28, in rms_norm\n"
       "    vllm_ops.rms_norm(out, input, weight, epsilon)\n"
       "NameError: name 'vllm_ops' is not defined",
       "missing_custom_op"},
      {"S-LoRA/S-LoRA slora/models/peft/lora_unordered_batch_infer.py",
       "  File \"/x/slora/models/peft/lora_unordered_batch_infer.py\", line 9, in <module>\n"
       "    from slora._kernels import dispatch_bgmv\n"
       "ModuleNotFoundError: No module named 'slora._kernels'",
       "missing_custom_op"},
      {"InternLM/lmdeploy lmdeploy/__init__.py bootstrap (Windows)",
       "  File \"C:\\x\\lmdeploy\\__init__.py\", line 25, in bootstrap\n"
       "    assert CUDA_PATH is not None, 'Can not find $env:CUDA_PATH'\n"
       "AssertionError: Can not find $env:CUDA_PATH",
       "wrong_platform_build"},
      {"martin-olivier/dylib include/dylib.hpp (janhq/cortex.cpp engine loader)",
       "20250101 10:00:00.000000 UTC 100 ERROR Could not load engine: Could not load library "
       "\"C:\\app\\engines\\cortex.llamacpp\\engine.dll\"\n"
       "Unknown error (FormatMessage failed) - server.cc:120",
       "shared_lib_undefined_symbol"},
      {"vllm-project/vllm vllm/worker/worker.py _check_if_gpu_supports_dtype (a lower-cased paste)",
       "valueerror: bfloat16 is only supported on gpus with compute capability of at least 8.0. your "
       "tesla t4 gpu has compute capability 7.5.",
       "unsupported_gpu_arch_runtime"},
      {"triton-lang/triton python/triton/runtime/errors.py OutOfResources (str(e) only)",
       "!!! Exception during processing !!! out of resource: shared memory, Required: 98304, Hardware "
       "limit: 65536. Reducing block sizes or `num_stages` may help.",
       "triton_kernel_compile_failure"},
      {"ROCm/ROCR-Runtime core/runtime/hsa.cpp hsa_status_string (the name split from its text)",
       ":0:rocdevice.cpp            :2900: 1234567890 us:  Callback: Queue 0x7f00 aborting with error : HSA\n"
       "_STATUS_ERROR_ILLEGAL_INSTRUCTION: The agent attempted to execute an illegal shader instruction. code: 0x2a",
       "hip_runtime_error"},
      {"sgl-project/mini-sglang python/minisgl/engine/engine.py _determine_num_pages",
       "  File \"/x/minisgl/engine/engine.py\", line 140, in _determine_num_pages\n"
       "    assert num_pages > 1, \"Not enough memory for KV cache, try reducing --num-tokens\"\n"
       "AssertionError: Not enough memory for KV cache, try reducing --num-tokens",
       "no_cache_blocks"},
      {"ggml-org/llama.cpp ggml/src/ggml-cuda/common.cuh ggml_cuda_error (peer copy, no NCCL)",
       "CUDA error: peer access is not supported between these two devices\n"
       "  current device: 1, in function ggml_cuda_set_peer_access at /src/ggml/src/ggml-cuda/ggml-cuda.cu:1300\n"
       "  cudaDeviceEnablePeerAccess(id_other, 0)\n"
       "/src/ggml/src/ggml-cuda/ggml-cuda.cu:70: CUDA error",
       "unknown"},
      {"vllm-project/vllm csrc/custom_all_reduce.cuh CUDACHECK (the custom all-reduce needs peer access)",
       "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:300 'peer access is not supported between "
       "these two devices'",
       "nccl_rccl_init_failure"},
      {"apache/tvm src/runtime/cuda/cuda_common.h CUDA_CALL (mlc-llm)",
       "tvm._ffi.base.TVMError: Traceback (most recent call last):\n"
       "  File \"/workspace/tvm/src/runtime/cuda/cuda_device_api.cc\", line 140\n"
       "InternalError: Check failed: (e == cudaSuccess || e == cudaErrorCudartUnloading) is false: CUDA: "
       "out of memory",
       "cuda_oom_model_load"},
      {"apache/tvm src/runtime/rocm/rocm_common.h ROCM_CALL (mlc-llm on ROCm)",
       "InternalError: Check failed: (e == hipSuccess) is false: ROCM HIP: out of memory",
       "cuda_oom_model_load"},
      {"ggml-org/llama.cpp ggml/src/ggml-vulkan/ggml-vulkan.cpp ggml_vk_create_buffer",
       "ggml_vulkan: Device memory allocation of size 2147483648 failed.",
       "cuda_oom_model_load"},
      {"nomic-ai/gpt4all gpt4all-backend/src/llmodel.cpp (MissingImplementationError, Python bindings)",
       "WARNING: CUDA runtime libraries not found. Try `pip install \"gpt4all[cuda]\"`\n"
       "RuntimeError: Unable to instantiate model: Could not find any implementations for backend: cuda",
       "shared_lib_undefined_symbol"},
      {"ollama/ollama os.Open of a model blob on Windows (Go os.PathError, ERROR_FILE_NOT_FOUND)",
       "Error: open C:\\Users\\ana\\.ollama\\models\\blobs\\sha256-0123abcd: The system cannot find the file "
       "specified.",
       "model_path_not_found"},
      {"nomic-ai/gpt4all gpt4all-bindings/java (LLModel)",
       "Exception in thread \"main\" java.lang.IllegalStateException: Model file does not exist: "
       "/home/ana/models/mistral-7b.Q4_0.gguf",
       "model_path_not_found"},
      {"nomic-ai/gpt4all gpt4all-backend llmodel_c.cpp llmodel_model_create2 (errno, Python bindings)",
       "  File \"/x/gpt4all/pyllmodel.py\", line 200, in __init__\n"
       "    raise ValueError(f\"Unable to instantiate model: code={err.code}, {err.message}\")\n"
       "ValueError: Unable to instantiate model: code=2, No such file or directory",
       "model_path_not_found"},
      {"nomic-ai/gpt4all gpt4all-backend llmodel_c.cpp (no implementation recognised the file: no class)",
       "ValueError: Unable to instantiate model: code=129, Model format not supported (no matching "
       "implementation found)",
       "unknown"},
      {"NVIDIA/TensorRT-LLM cpp/include/tensorrt_llm/common/cudaUtils.h check()",
       "RuntimeError: [TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): "
       "out of memory (/src/tensorrt_llm/runtime/tllmBuffers.h:125)",
       "cuda_oom_model_load"},
      {"golang/go src/os/exec_posix.go ProcessState.String (Windows STATUS_DLL_NOT_FOUND, Ollama)",
       "time=2025-06-01T10:00:00.000+02:00 level=ERROR source=sched.go:455 msg=\"error loading llama server\" "
       "error=\"llama runner process has terminated: exit status 0xc0000135\"\n"
       "Error: llama runner process has terminated: exit status 0xc0000135",
       "shared_lib_undefined_symbol"},
      {"Windows STATUS_INVALID_IMAGE_FORMAT as a decimal exit code (a launcher's subprocess)",
       "ERROR: llama-server exited with code 3221225595",
       "shared_lib_undefined_symbol"},
      {"golang/go src/os/exec_posix.go: a small exit status stays a follow-on (no class)",
       "Error: llama runner process has terminated: exit status 2",
       "unknown"},
      {"nomic-ai/gpt4all gpt4all-chat/src/chatllm.cpp ChatLLM::loadDefaultModel",
       "[Warning] (Mon Jun 2 10:00:00 2025): ERROR: Could not find any model to load",
       "model_path_not_found"},
      // ------------------------------------- sixth rules-from-sources round
      {"ml-explore/mlx-lm mlx_lm/utils.py _get_classes (raised)",
       "Traceback (most recent call last):\n"
       "  File \"/opt/venv/lib/python3.11/site-packages/mlx_lm/utils.py\", line 66, in _get_classes\n"
       "    raise ValueError(msg)\n"
       "ValueError: Model type fancyformer not supported.",
       "unsupported_model_architecture"},
      {"ml-explore/mlx-lm mlx_lm/utils.py _get_classes (the root logger's line)",
       "ERROR:root:Model type zeta_moe not supported.",
       "unsupported_model_architecture"},
      {"Blaizzy/mlx-vlm mlx_vlm/utils.py get_model_and_args (LM Studio's MLX runtime)",
       "Error when loading model: ValueError: Model type omni9 not supported. Error: No module named "
       "'mlx_vlm.models.omni9'",
       "unsupported_model_architecture"},
      {"Blaizzy/mlx-audio (per category)",
       "ValueError: Model type whisperx not supported for stt.",
       "unsupported_model_architecture"},
      {"a program's own 'Model type' check (no raised type, no root logger): not MLX's",
       "Model type stl not supported for conversion!",
       "unknown"},
      {"turboderp-org/exllamav2 exllamav2/config.py ExLlamaV2Config.prepare (missing tensor prefix)",
       "  File \"/usr/lib/python3/dist-packages/exllamav2/config.py\", line 301, in prepare\n"
       "    raise ValueError(f\" ## Could not find {prefix}.* in model\")\n"
       "ValueError:  ## Could not find model.layers.0.mlp.gate_proj.* in model",
       "unsupported_model_architecture"},
      {"turboderp-org/exllamav2 exllamav2/config.py prepare (no .safetensors)",
       "ValueError:  ## No .safetensors files found in /models/some-model-exl2",
       "model_path_not_found"},
      {"ml-explore/mlx-lm mlx_lm/utils.py load_model (no safetensors)",
       "FileNotFoundError: No safetensors found in /Users/me/models/foo-7b",
       "model_path_not_found"},
      {"google/sentencepiece python/src/sentencepiece/__init__.py _batchnize _func",
       "  File \"/venv/lib/python3.10/site-packages/sentencepiece/__init__.py\", line 1172, in _func\n"
       "    raise IndexError('piece id is out of range.')\n"
       "IndexError: piece id is out of range.",
       "config_or_tokenizer_error"},
      {"vllm-project/vllm vllm/vllm_flash_attn/__init__.py (no FA2/FA3 extension)",
       "ImportError: vllm.vllm_flash_attn requires the CUDA flash attention extensions (_vllm_fa2_C or "
       "_vllm_fa3_C). On ROCm, use upstream flash_attn.",
       "missing_custom_op"},
      {"CPython Python/ceval.c import_from for ROCm/aiter (namespace package, no built module)",
       "ImportError: cannot import name 'fused_topk' from 'aiter' (unknown location)",
       "missing_custom_op"},
      {"ROCm/aiter absent (raised)",
       "ModuleNotFoundError: No module named 'aiter'",
       "missing_custom_op"},
      {"vllm-project/vllm vllm/v1/attention/backends/flash_attn.py (0.7.x) bare assert as the source line",
       "  File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/attention/backends/flash_attn.py\", line 140, "
       "in __init__\n"
       "    assert is_fa_version_supported(self.fa_version)\n"
       "AssertionError",
       "unsupported_gpu_arch_runtime"},
      {"vllm_flash_attn's reason when the extension did not import: not the arch",
       "ERROR 03-01 10:00:00 flash_attn.py:120] Cannot use FA version 2 is not supported due to FA2 is "
       "unavaible due to: libcudart.so.12: cannot open shared object file: No such file or directory\n"
       "  File \"/x/vllm/v1/attention/backends/flash_attn.py\", line 140, in __init__\n"
       "    assert is_fa_version_supported(self.fa_version)\n"
       "AssertionError",
       "shared_lib_undefined_symbol"},
      {"vllm-project/vllm vllm/utils.py get_open_port (INFO: it stepped past the port)",
       "INFO 03-01 10:00:00 utils.py:500] Port 9090 is already in use, trying port 9091\n"
       "KeyError: 'model.layers.0.self_attn.qkv_proj.weight'",
       "unknown"},
      {"a port taken, as SGLang's own check says it (control: still port_in_use)",
       "Exception: Port 30000 is already in use. Please choose another port.",
       "port_in_use"},
      {"cudart cudaErrorInsufficientDriver (error 35): a driver/toolkit mismatch, no class",
       "CUDA error 35 at /tmp/llama.cpp/ggml-cuda.cu:5522: CUDA driver version is insufficient for CUDA "
       "runtime version",
       "unknown"},
      // ------------------------------------- non-Python error formats (structure)
      {"glog LOG(FATAL) (lmdeploy turbomind, any glog server)",
       "I1204 12:34:56.000001  77 server.cc:10] loading\n"
       "F1204 12:34:56.789012  77 allocator.cc:88] cudaMalloc failed: out of memory",
       "cuda_oom_model_load"},
      {"libc++abi terminate (macOS llama.cpp)",
       "libc++abi: terminating due to uncaught exception of type std::runtime_error: unknown model "
       "architecture: 'gemma3n'",
       "unsupported_model_architecture"},
      {"text-generation-inference launcher: the shard's error, then the launcher's exit",
       "ERROR text_generation_launcher: Error when initializing model\n"
       "ValueError: Unsupported model type foo\n"
       "Error: ShardCannotStart",
       "unsupported_model_architecture"},
      {"sgl-project/sglang srt/entrypoints/engine.py: the scheduler's error, then the launcher's",
       "[2025-03-10 14:17:52 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
       "  File \"/x/sglang/srt/managers/scheduler.py\", line 1787, in run_scheduler_process\n"
       "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n"
       "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"
       "[2025-03-10 14:17:53] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
       "Traceback (most recent call last):\n"
       "  File \"/x/sglang/launch_server.py\", line 14, in <module>\n"
       "    launch_server(server_args)\n"
       "  File \"/x/sglang/srt/entrypoints/engine.py\", line 520, in _launch_subprocesses\n"
       "    data = scheduler_pipe_readers[i].recv()\n"
       "EOFError",
       "no_cache_blocks"},
      // ------------------------------------------------ healthy and warnings
      {"vllm-project/vllm healthy start-up",
       "INFO 06-01 10:00:00 [gpu_worker.py:1] Available KV cache memory: 20.5 GiB\n"
       "INFO 06-01 10:00:01 [kv_cache_utils.py:1] GPU KV cache size: 300,000 tokens\n"
       "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
       "unknown"},
      {"ollama/ollama healthy ROCm start-up (llm/server.go, discover/)",
       "time=2025-06-01T10:00:00.000Z level=INFO source=types.go:130 msg=\"inference compute\" id=0 "
       "library=rocm variant=\"\" compute=gfx1100 driver=6.3 name=1002:744c total=\"24.0 GiB\"\n"
       "llama_kv_cache_init:      ROCm0 KV buffer size =  1024.00 MiB\n"
       "llama_new_context_with_model:      ROCm0 compute buffer size =   560.00 MiB\n"
       "time=2025-06-01T10:00:05.000Z level=INFO source=server.go:1 msg=\"llama runner started in 2.01 seconds\"",
       "unknown"},
      {"ggml-org/llama.cpp healthy server start-up",
       "ggml_cuda_init: found 1 CUDA devices:\n"
       "llama_model_loader: loaded meta data with 30 key-value pairs and 291 tensors from /models/x.gguf\n"
       "llm_load_tensors: offloaded 33/33 layers to GPU\n"
       "main: server is listening on http://127.0.0.1:8080 - starting the main loop",
       "unknown"},
      {"NVIDIA/nccl INFO lines of a healthy communicator (net plugin absent)",
       "host:1:1 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such "
       "file or directory No plugin found (libnccl-net.so), using internal implementation\n"
       "host:1:1 [0] NCCL INFO Channel 00/02 :    0   1\n"
       "host:1:1 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE",
       "unknown"},
      {"sgl-project/sglang healthy start-up",
       "[2025-06-01 10:00:00] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60.1 GB\n"
       "[2025-06-01 10:00:01] KV Cache is allocated. #tokens: 400000, K size: 24.4 GB, V size: 24.4 GB\n"
       "[2025-06-01 10:00:09] The server is fired up and ready to roll!",
       "unknown"},
      {"pytorch/pytorch torch/cuda/__init__.py (a warning, not an error)",
       "UserWarning: Found GPU0 NVIDIA GeForce GTX 1080 which is of cuda capability 6.1. The current "
       "PyTorch install supports CUDA capabilities sm_70 sm_80.\n"
       "INFO:     Application startup complete.",
       "unknown"},
      {"vllm-project/vllm vllm/v1/worker/gpu_worker.py determine_available_memory (memory went up)",
       "AssertionError: Error in memory profiling. Initial free memory 30.5 GiB, current free memory "
       "41.2 GiB. This happens when other processes sharing the same container release GPU memory "
       "while vLLM is profiling during initialization. To fix this, ensure consistent GPU memory "
       "allocation or isolate vLLM in its own container.",
       "unknown"},
      {"psf/requests src/requests/models.py Response.json (an HTTP body, not a config file)",
       "  File \"/opt/venv/lib/python3.11/site-packages/requests/models.py\", line 978, in json\n"
       "    raise RequestsJSONDecodeError(e.msg, e.doc, e.pos)\n"
       "requests.exceptions.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
       "unknown"},
      {"sgl-project/sglang python/sglang/srt/distributed/parallel_state.py get_tp_group (import skipped)",
       "WARNING:sglang.srt.models.registry:Ignore import error when loading sglang.srt.models.foo_llama. "
       "tensor model parallel group is not initialized\n"
       "ERROR | app.cli:main:12 - No GPU found.",
       "unknown"},
      // Seventh rules round: HCCL, Docker's published port, Paddle's and
      // mlc-llm's OOM, model paths, TensorRT's engine arch.
      {"Ascend/pytorch torch_npu/csrc/distributed/HCCLUtils.hpp HCCL_CHECK_ERROR",
       "RuntimeError: create_config:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:102 HCCL function "
       "error: hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &(comm->hcclComm_)), error "
       "code is 7\n"
       "[ERROR] 2026-01-02-10:00:00 (PID:4242, Device:1, RankID:-1) ERR02200 DIST call hccl api failed.",
       "nccl_rccl_init_failure"},
      {"Ascend/pytorch torch_npu ProcessGroupHCCL C10D_HCCL_CHECK",
       "RuntimeError: [ERROR] HCCL error in: torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:64\n"
       "[ERROR] 2026-01-02-10:00:00 (PID:4242, Device:3, RankID:3) ERR02200 DIST call hccl api failed.",
       "nccl_rccl_init_failure"},
      {"Ascend ascend-transformer-boost src/atb/runner/hccl_runner.cpp HcclRunner",
       "[2026-01-02 10:00:00.000] [error] [4242] [hccl_runner.cpp:169] AllReduceHcclRunner:0 HcclGetRootInfo "
       "fail, error:1, rank:0\n"
       "[2026-01-02 10:00:00.001] [error] [4242] [hccl_runner.cpp:72] AllReduceHcclRunner:0 get hccl comm fail "
       "by rank:0",
       "nccl_rccl_init_failure"},
      {"moby/moby libnetwork/portallocator/portallocator.go alreadyAllocatedErr",
       "docker: Error response from daemon: driver failed programming external connectivity on endpoint "
       "llm-server (0123abcd): Bind for 0.0.0.0:11434 failed: port is already allocated.",
       "port_in_use"},
      {"PaddlePaddle paddle/phi/core/memory/allocation/cuda_allocator.cc PADDLE_THROW_BAD_ALLOC",
       "ResourceExhaustedError: \n\nOut of memory error on GPU 0. Cannot allocate 512.000000MB memory on GPU 0, "
       "23.500000GB memory has been allocated and available memory is only 120.000000MB.",
       "cuda_oom_model_load"},
      {"mlc-ai/mlc-llm cpp/serve/config.cc EstimateMemoryUsageOnMode",
       "TVMError: Check failed: (output_res.IsOk()) is false: Insufficient GPU memory error: The available "
       "single GPU memory is 10240.000 MB, which is less than the sum of model weight size (9000.500 MB) and "
       "temporary buffer size (2048.000 MB).",
       "cuda_oom_model_load"},
      {"oobabooga/text-generation-webui modules/models.py load_model",
       "12:00:00-000000 INFO     Loading \"my-model-7b\"\n"
       "12:00:00-000001 ERROR    The path to the model does not exist. Exiting.",
       "model_path_not_found"},
      {"ggml-org/ggml examples/gpt-2 main.cpp gpt2_model_load",
       "gpt2_model_load: loading model from 'models/gpt-2-117M/ggml-model.bin'\n"
       "gpt2_model_load: failed to open 'models/gpt-2-117M/ggml-model.bin'\n"
       "main: failed to load model from 'models/gpt-2-117M/ggml-model.bin'",
       "model_path_not_found"},
      {"ggml-org/ggml examples (bad magic: a file of another format, not a missing path)",
       "gpt2_model_load: loading model from 'models/model.bin'\n"
       "gpt2_model_load: invalid model file 'models/model.bin' (bad magic)",
       "unknown"},
      {"meta-llama/llama llama/generation.py Llama.build",
       "    assert len(checkpoints) > 0, f\"no checkpoint files found in {ckpt_dir}\"\n"
       "AssertionError: no checkpoint files found in llama-2-13b/",
       "model_path_not_found"},
      {"NVIDIA TensorRT deserializeEngine error 6 (NVIDIA/trt-samples-for-hackathon-cn)",
       "[TRT] [E] 6: The engine plan file is generated on an incompatible device, expecting compute 8.6 got "
       "compute 9.0, please rebuild.\n"
       "[TRT] [E] 2: [engine.cpp::deserializeEngine::951] Error Code 2: Internal Error (Assertion "
       "engine->deserialize(start, size, allocator, runtime) failed. )",
       "unsupported_gpu_arch_runtime"},
      {"NVIDIA TensorRT deserializeEngine error 6, version sibling (not the arch)",
       "[TRT] [E] 6: The engine plan file is not compatible with this version of TensorRT, expecting library "
       "version 10.3.0.26 got 10.1.0.27, please rebuild.",
       "unknown"},
      // ------------------------- round: rules from sources, an eighth time
      {"ggml-org/llama.cpp ggml-cuda common.cuh ggml_cuda_error (HIP build, device-memory query)",
       "ggml_cuda_init: found 1 ROCm devices:\n"
       "  Device 0: AMD Radeon Example, compute capability 9.0, VMM: no\n"
       "CUDA error: invalid argument\n"
       "  current device: 0, in function ggml_backend_cuda_get_device_memory at /src/ggml-cuda.cu:1234\n"
       "  hipMemGetInfo(free, total)\n"
       "GGML_ASSERT: /src/ggml-cuda.cu:77: !\"CUDA error\"",
       "hip_runtime_error"},
      {"ollama runner end (ggml_cuda_error function line of the device-memory query)",
       "Error: llama runner process has terminated: error:invalid argument current device: 0, in function "
       "ggml_backend_cuda_device_get_memory at /build/ggml/src/ggml-cuda/ggml-cuda.cu:999",
       "hip_runtime_error"},
      {"ggml-org/llama.cpp ggml/src/ggml-cuda/vendors/hip.h CU_CHECK (HipVMM)",
       "/src/ggml/src/ggml-cuda/ggml-cuda.cu:555: HipVMM Failure: invalid argument",
       "hip_runtime_error"},
      {"ROCm/clr hip_error.cpp hipErrorNotFound via ggml_cuda_error",
       "CUDA error: named symbol not found\n"
       "  current device: 0, in function ggml_cuda_op_mul_mat at /src/ggml-cuda.cu:4321\n"
       "  hipGetLastError()",
       "hip_invalid_device_function"},
      {"ggml-org/llama.cpp ggml_cuda_init on a CUDA build: the same text is cudaErrorSymbolNotFound",
       "ggml_cuda_init: found 1 CUDA devices:\n"
       "  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n"
       "CUDA error: named symbol not found\n"
       "  current device: 0, in function ggml_cuda_op_mul_mat at /src/ggml-cuda.cu:4321\n"
       "  cudaGetLastError()",
       "unknown"},
      {"ggml-org/llama.cpp (pinned memory warning, it goes on)",
       "WARNING: failed to allocate 512.00 MB of pinned memory: out of memory\n"
       "main: server is listening on http://127.0.0.1:8080 - starting the main loop",
       "unknown"},
      // ------------------------------ round: rules from sources, a ninth time
      {"huggingface/transformers src/transformers/configuration_utils.py get_config_dict",
       "OSError: Can't load config for 'acme/widget-7b'. If you were trying to load it from "
       "'https://huggingface.co/models', make sure you don't have a local directory with the same name. "
       "Otherwise, make sure 'acme/widget-7b' is the correct path to a directory containing a config.json file",
       "model_path_not_found"},
      {"huggingface/transformers configuration_utils.py (4.0-4.9 wording)",
       "OSError: Can't load config for 'widget-base'. Make sure that:\n"
       "\n"
       "- 'widget-base' is a correct model identifier listed on 'https://huggingface.co/models'\n"
       "\n"
       "- or 'widget-base' is the correct path to a directory containing a config.json file",
       "model_path_not_found"},
      {"modelscope/modelscope modelscope/hub/api.py HubApi.repo_exists",
       "Traceback (most recent call last):\n"
       "  File \"/opt/conda/lib/python3.11/site-packages/modelscope/hub/api.py\", line 640, in repo_exists\n"
       "    raise Exception('Invalid repo_id: %s, must be of format namespace/name' % repo_type)\n"
       "Exception: Invalid repo_id: model, must be of format namespace/name",
       "model_path_not_found"},
      {"modelscope/modelscope hub/api.py repo_exists for a dataset path (not a model)",
       "Exception: Invalid repo_id: dataset, must be of format namespace/name", "unknown"},
      {"oobabooga/text-generation-webui modules/GPTQ_loader.py load_quantized",
       "2023-05-01 10:00:00 INFO:Loading widget-13B-GPTQ-4bit-128g...\n"
       "2023-05-01 10:00:01 ERROR:Could not find the quantized model in .pt or .safetensors format, exiting...",
       "model_path_not_found"},
      {"oobabooga/text-generation-webui GPTQ_loader.py given a GGML file (a format, not a path)",
       "INFO:Loading widget-13B.ggmlv3.q4_0.bin...\n"
       "ERROR:Could not find the quantized model in .pt or .safetensors format, exiting...",
       "unknown"},
      {"oobabooga/text-generation-webui GPTQ_loader.py given an unquantised model (twelfth round: nothing in the log "
       "says the model is a quantised one, so path and format are alike)",
       "INFO:Loading acme_widget-6.7b...\n"
       "ERROR:Could not find the quantized model in .pt or .safetensors format, exiting...",
       "unknown"},
      {"huggingface/transformers.js src/utils/hub.js getModelFile (local_files_only)",
       "Error: `local_files_only=true` or `env.allowRemoteModels=false` and file was not found locally at "
       "\"/srv/app/models/acme/widget-small/onnx/model_quantized.onnx\".\n"
       "    at getModelFile (file:///srv/app/node_modules/@huggingface/transformers/src/utils/hub.js:500:27)",
       "model_path_not_found"},
      {"huggingface/transformers.js src/utils/hub.js handleError (ERROR_MAPPING[404])",
       "Error: Could not locate file: \"https://huggingface.co/acme/widget-small/resolve/main/onnx/model.onnx\".",
       "model_path_not_found"},
      {"psf/requests adapters.py HTTPAdapter.send + urllib3 MaxRetryError (hub unreachable)",
       "requests.exceptions.ConnectionError: (MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', "
       "port=443): Max retries exceeded with url: /api/models/acme/widget-7b/revision/main (Caused by "
       "NameResolutionError(\\\"<urllib3.connection.HTTPSConnection object at 0x7f00>: Failed to resolve "
       "'huggingface.co' ([Errno -3] Temporary failure in name resolution)\\\"))\"), '(Request ID: 1234)')",
       "model_path_not_found"},
      {"ggml-org/llama.cpp src/llama-model-loader.cpp (split GGUF part missing)",
       "gguf_init_from_file: failed to open GGUF file '/models/widget-00002-of-00003.gguf'\n"
       "llama_model_load: error loading model: llama_model_loader: failed to load GGUF split from "
       "/models/widget-00002-of-00003.gguf\n"
       "llama_model_load_from_file_impl: failed to load model",
       "model_path_not_found"},
      {"LostRuins/koboldcpp koboldcpp.py main (exit_with_error 2)",
       "Loading Chat Completions Adapter: None\n"
       "==========\n"
       "Cannot find text model file: /home/user/models/widget-7b.Q4_K_M.gguf",
       "model_path_not_found"},
      {"LostRuins/koboldcpp koboldcpp.py main (the mmproj sibling)",
       "Cannot find mmproj file: C:\\models\\widget-mmproj-f16.gguf", "model_path_not_found"},
      {"psf/requests: another host unreachable (not the model hub)",
       "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='example.org', port=443): Max retries "
       "exceeded with url: /v1/usage (Caused by NewConnectionError('Failed to establish a new connection'))",
       "unknown"},
      {"huggingface/transformers models/auto/configuration_auto.py (frame line without its space)",
       "  File \"/env/lib/python3.9/site-packages/transformers/models/auto/configuration_auto.py\",line 710, "
       "in from_pretrained\n"
       "    config_class = CONFIG_MAPPING[config_dict[\"model_type\"]]\n"
       "  File \"/env/lib/python3.9/site-packages/transformers/models/auto/configuration_auto.py\",line 420, "
       "in __getitem__\n"
       "    raise KeyError(key)\n"
       "KeyError: 'widgetformer'",
       "unsupported_model_architecture"},
      {"li-plus/chatglm.cpp chatglm.cpp Pipeline (CHATGLM_THROW invalid model type)",
       "RuntimeError: /src/chatglm.cpp/chatglm.cpp:1846 invalid model type 5", "unsupported_model_architecture"},
      {"li-plus/chatglm.cpp chatglm.cpp Pipeline (file version newer than the build)",
       "RuntimeError: /src/chatglm.cpp/chatglm.cpp:1783 only support version 1 or 2 for now but got 3",
       "unsupported_model_architecture"},
      {"turboderp/exllamav2 exllamav2/ext.py (import exllamav2_ext, JIT build not possible)",
       "Traceback (most recent call last):\n"
       "  File \"/env/lib/python3.11/site-packages/exllamav2/ext.py\", line 14, in <module>\n"
       "    import exllamav2_ext\n"
       "ModuleNotFoundError: No module named 'exllamav2_ext'",
       "missing_custom_op"},
      {"qwopqwop200/GPTQ-for-LLaMa quant.py (import quant_cuda)",
       "  File \"/app/repositories/GPTQ-for-LLaMa/quant.py\", line 5, in <module>\n"
       "    import quant_cuda\n"
       "ModuleNotFoundError: No module named 'quant_cuda'",
       "missing_custom_op"},
      {"xorbitsai/xoscar backends/message.pyx (Xinference worker) + transformers configuration_auto.py",
       "  File \"/opt/conda/lib/python3.10/site-packages/xinference/core/worker.py\", line 900, in launch_builtin_model\n"
       "    await model_ref.load()\n"
       "  File \"/opt/conda/lib/python3.10/site-packages/transformers/models/auto/configuration_auto.py\", line "
       "1000, in from_pretrained\n"
       "    config_class = CONFIG_MAPPING[config_dict[\"model_type\"]]\n"
       "KeyError: [address=0.0.0.0:40001, pid=1234] 'widgetformer'",
       "unsupported_model_architecture"},
      {"xorbitsai/xoscar backends/message.pyx (Xinference worker) + Python json/decoder.py",
       "json.decoder.JSONDecodeError: [address=0.0.0.0:40001, pid=1234] Expecting value: line 1 column 1 (char 0)",
       "config_or_tokenizer_error"},
      {"mudler/LocalAI pkg/model/process.go relay + google/sentencepiece __init__.py LoadFromFile",
       "3:04PM DBG GRPC(widget-7b-127.0.0.1:40001): stderr Traceback (most recent call last):\n"
       "3:04PM DBG GRPC(widget-7b-127.0.0.1:40001): stderr   File \"/env/lib/python3.10/site-packages/"
       "sentencepiece/__init__.py\", line 310, in LoadFromFile\n"
       "3:04PM DBG GRPC(widget-7b-127.0.0.1:40001): stderr     return _sentencepiece.SentencePieceProcessor_"
       "LoadFromFile(self, arg)\n"
       "3:04PM DBG GRPC(widget-7b-127.0.0.1:40001): stderr TypeError: not a string",
       "config_or_tokenizer_error"},
      {"mudler/LocalAI pkg/model/process.go relay of a healthy backend (DBG lines)",
       "3:04PM DBG GRPC(widget-7b-127.0.0.1:40001): stderr llama_model_loader: loaded meta data with 30 "
       "key-value pairs\n"
       "3:04PM DBG GRPC(widget-7b-127.0.0.1:40001): stdout Server listening on 127.0.0.1:40001",
       "unknown"},
      {"mit-han-lab/llm-awq awq/quantize/qmodule.py (import awq_inference_engine)",
       "    import awq_inference_engine  # with CUDA kernels\n"
       "ModuleNotFoundError: No module named 'awq_inference_engine'",
       "missing_custom_op"},
      // ---------------------------------------------- rules round 10 (stop 42)
      {"ROCm/rocBLAS library/src/tensile_host.cpp (no device visible: SOURCE.md, settled in stop 42)",
       "rocBLAS error: Could not initialize Tensile host: No devices found\n"
       "time=2025-01-01T10:00:00.000Z level=ERROR source=sched.go:455 msg=\"error loading llama server\" "
       "error=\"llama runner process has terminated: signal: aborted (core dumped)\"",
       "unknown"},
      {"ROCm/rocBLAS library/src/tensile_host.cpp (no device, but the arch's Tensile library named)",
       "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory "
       "for GPU arch : gfx1036\n"
       "rocBLAS error: Could not initialize Tensile host: No devices found",
       "rocm_library_missing_arch"},
      {"ROCm/rocBLAS library/src/tensile_host.cpp (another reason)",
       "rocBLAS error: Could not initialize Tensile host:\nregex_error(error_backref): The expression contained an "
       "invalid back reference.",
       "rocm_library_missing_arch"},
      {"huggingface/transformers tokenization_utils_base.py (a GGUF repo given to the tokenizer loader)",
       "OSError: Can't load tokenizer for 'SomeOrg/Widget-13B-GGUF'. If you were trying to load it from "
       "'https://huggingface.co/models', make sure you don't have a local directory with the same name. "
       "Otherwise, make sure 'SomeOrg/Widget-13B-GGUF' is the correct path to a directory containing all "
       "relevant files for a LlamaTokenizerFast tokenizer.",
       "unknown"},
      {"huggingface/transformers tokenization_utils_base.py (the model's own repo)",
       "OSError: Can't load tokenizer for 'someorg/widget-7b'. If you were trying to load it from "
       "'https://huggingface.co/models', make sure you don't have a local directory with the same name. "
       "Otherwise, make sure 'someorg/widget-7b' is the correct path to a directory containing all relevant "
       "files for a LlamaTokenizerFast tokenizer.",
       "config_or_tokenizer_error"},
      {"huggingface/transformers tokenization_utils_base.py (the hub cache's root given as the model)",
       "OSError: Can't load tokenizer for '/home/u/.cache/huggingface/hub/'. If you were trying to load it "
       "from 'https://huggingface.co/models', make sure you don't have a local directory with the same name. "
       "Otherwise, make sure '/home/u/.cache/huggingface/hub/' is the correct path to a directory containing "
       "all relevant files for a BertTokenizer tokenizer.",
       "model_path_not_found"},
      {"huggingface/transformers modeling_utils.py (a GPTQ repo given to the plain loader)",
       "OSError: SomeOrg/widget-7B-GPTQ does not appear to have a file named pytorch_model.bin, tf_model.h5, "
       "model.ckpt or flax_model.msgpack.",
       "unknown"},
      {"huggingface/transformers modeling_utils.py (a 4bit-128g folder given to the plain loader)",
       "OSError: Error no file named pytorch_model.bin, tf_model.h5, model.ckpt.index or flax_model.msgpack "
       "found in directory models/widget-13b-4bit-128g.",
       "unknown"},
      {"huggingface/transformers modeling_utils.py (a repo without weights)",
       "OSError: someorg/widget-7b does not appear to have a file named pytorch_model.bin, tf_model.h5, "
       "model.ckpt or flax_model.msgpack.",
       "model_path_not_found"},
      {"AutoGPTQ/AutoGPTQ / ModelCloud/GPTQModel quantization config (quantize_config.json absent)",
       "FileNotFoundError: [Errno 2] No such file or directory: "
       "'/data/hub/someorg/widget-0_5b-gptq-int4/quantize_config.json'",
       "unknown"},
      {"triton-lang/triton python/triton/compiler/compiler.py (v2.1/2.2) ttgir_to_llir",
       "Traceback (most recent call last):\n"
       "  File \"/env/lib/python3.10/site-packages/triton/compiler/compiler.py\", line 543, in compile\n"
       "    next_module = compile_kernel(module)\n"
       "  File \"/env/lib/python3.10/site-packages/triton/compiler/compiler.py\", line 167, in ttgir_to_llir\n"
       "    return translate_triton_gpu_to_llvmir(mod, target.capability, tma_infos, runtime.TARGET.NVVM)\n"
       "IndexError: map::at",
       "triton_kernel_compile_failure"},
      {"a C++ extension's std::map::at outside triton (pybind11 IndexError)",
       "Traceback (most recent call last):\n"
       "  File \"/env/lib/python3.10/site-packages/widget/ops.py\", line 12, in forward\n"
       "    return _C.widget_forward(x)\n"
       "IndexError: map::at",
       "unknown"},
      {"huggingface/transformers v2.x tokenization_utils.py _from_pretrained",
       "OSError: Model name 'someorg/widget-base' was not found in tokenizers model name list "
       "(bert-base-uncased, bert-large-uncased, bert-base-cased). We assumed 'someorg/widget-base' was a path, "
       "a model identifier, or url to a directory containing vocabulary files named ['vocab.txt'] but "
       "couldn't find such vocabulary files at this path or url.",
       "model_path_not_found"},
      {"huggingface/pytorch-pretrained-BERT modeling.py from_pretrained (logger.error, then None)",
       "ERROR:pytorch_pretrained_bert.modeling:Model name '/data/widget' was not found in model name list "
       "(bert-base-uncased, bert-large-uncased). We assumed '/data/widget/bert_config.json' was a path or url "
       "but couldn't find any file associated to this path or url.",
       "model_path_not_found"},
      {"huggingface/text-generation-inference server/text_generation_server/layers/rotary.py",
       "NotImplementedError: rope scaling type longrope is not implemented or invalid",
       "config_or_tokenizer_error"},
      {"Python import of a transformers model class newer than the installed library",
       "ImportError: cannot import name 'Widget3ForConditionalGeneration' from 'transformers' "
       "(/env/lib/python3.10/site-packages/transformers/__init__.py)",
       "unsupported_model_architecture"},
      {"huggingface/transformers src/transformers/utils/import_utils.py _LazyModule.__getattr__",
       "AttributeError: module transformers has no attribute Widget3ForCausalLM",
       "unsupported_model_architecture"},
      {"Python import of a transformers utility (not a model class)",
       "ImportError: cannot import name 'GenerationConfig' from 'transformers' "
       "(/env/lib/python3.10/site-packages/transformers/__init__.py)",
       "unknown"},
      {"pytorch/pytorch torch/distributed/distributed_c10d.py _store_based_barrier (1.x)",
       "RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: "
       "store_based_barrier_key:1 (world_size=8, worker_count=4, timeout=0:30:00)",
       "nccl_rccl_init_failure"},
      {"pytorch/pytorch torch/distributed/distributed_c10d.py _store_based_barrier (2.x)",
       "torch.distributed.DistStoreError: Timed out initializing process group in store based barrier on rank "
       "3, for key: store_based_barrier_key:1 (world_size=4, num_workers_joined=3, timeout=0:30:00 error=)",
       "nccl_rccl_init_failure"},
      {"pytorch/pytorch distributed_c10d.py (another rank's OOM first, then the barrier timeout)",
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of "
       "23.65 GiB of which 1.20 GiB is free.\n"
       "RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: "
       "store_based_barrier_key:1 (world_size=2, worker_count=1, timeout=0:30:00)",
       "cuda_oom_model_load"},
      {"pytorch/pytorch distributed_c10d.py (the barrier completing: healthy)",
       "INFO:torch.distributed.distributed_c10d:Rank 0: Completed store-based barrier for key:"
       "store_based_barrier_key:1 with 2 nodes.",
       "unknown"},
      {"modelscope/modelscope modelscope/hub/snapshot_download.py (1.x)",
       "modelscope.hub.errors.NotExistError: The specified branch or tag : v9.9.9 not exist!",
       "model_path_not_found"},
      {"ollama/ollama server/images.go PullModel (the registry's 412 relayed)",
       "Error: pull model manifest: 412: The model you are attempting to pull requires a newer version of "
       "Ollama.",
       "unsupported_model_architecture"},
      {"facebookincubator/gloo gloo/transport/tcp/device.cc lookupAddrForIface (torch's CPU group)",
       "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. "
       "Unable to find address for: eth7",
       "nccl_rccl_init_failure"},
      {"another program's host lookup (not gloo)",
       "Unable to find address for: widget.example.com",
       "unknown"},
      {"pytorch/pytorch torch/distributed/distributed_c10d.py _new_process_group_helper",
       "RuntimeError: Distributed package doesn't have NCCL built in",
       "wrong_platform_build"},
      {"huggingface/transformers src/transformers/modeling_utils.py _flash_attn_2_can_dispatch",
       "ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the following error: the "
       "package flash_attn seems to be not installed. Please refer to the documentation of "
       "https://huggingface.co/docs/transformers/perf_infer_gpu_one#flashattention-2 to install Flash Attention 2.",
       "missing_custom_op"},
      {"huggingface/transformers src/transformers/modeling_utils.py _flash_attn_2_can_dispatch (old flash_attn)",
       "ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the following error: you "
       "need flash_attn package version to be greater or equal than 2.1.0. Detected version 1.0.9. Please refer "
       "to the documentation of https://huggingface.co/docs/transformers/perf_infer_gpu_one#flashattention-2 to "
       "install Flash Attention 2.",
       "missing_custom_op"},
      {"huggingface/transformers src/transformers/modeling_utils.py _flash_attn_2_can_dispatch (no device)",
       "ValueError: FlashAttention2 has been toggled on, but it cannot be used due to the following error: Flash "
       "Attention 2 is not available on CPU. Please make sure torch can access a CUDA device.",
       "unknown"},
      {"NVIDIA/TensorRT-LLM tensorrt_llm/_torch/models/modeling_auto.py AutoModelForCausalLM.from_config",
       "ValueError: Unknown architecture for AutoModelForCausalLM: Widget3ForCausalLM",
       "unsupported_model_architecture"},
      {"NVIDIA/TensorRT-LLM tensorrt_llm/models/automodel.py TopModelMixin.from_hugging_face",
       "NotImplementedError: The given huggingface model architecture Widget3ForCausalLM is not supported in "
       "TRT-LLM yet",
       "unsupported_model_architecture"},
      {"pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (no device visible: unknown)",
       "RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!",
       "unknown"},
      {"huggingface/transformers src/transformers/dynamic_module_utils.py resolve_trust_remote_code (a flag)",
       "ValueError: The repository for /models/widget contains custom code which must be executed to correctly "
       "load the model. You can inspect the repository content at https://hf.co//models/widget.\n"
       "Please pass the argument `trust_remote_code=True` to allow custom code to be run.",
       "unknown"},
      {"huggingface/transformers src/transformers/configuration_utils.py from_pretrained (a warning, then healthy)",
       "You are using a model of type widget2 to instantiate a model of type llama. This is not supported for all "
       "configurations of models and can yield errors.\n"
       "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
       "unknown"},
      // ---------------------------------------- rules round 11 (stop 42)
      {"huggingface/text-generation-inference server/text_generation_server/models/custom_modeling/"
       "flash_llama_modeling.py FlashLlamaAttention (KV heads // shards == 0)",
       "[rank1]:   File \"/opt/conda/lib/python3.11/site-packages/text_generation_server/models/custom_modeling/"
       "flash_llama_modeling.py\", line 210, in __init__\n"
       "[rank1]:     self.num_groups = self.num_heads // self.num_key_value_heads\n"
       "[rank1]: ZeroDivisionError: integer division or modulo by zero\n"
       "Error: ShardCannotStart",
       "tp_not_divisible_heads"},
      {"a ZeroDivisionError of another program (no KV-head split in the log)",
       "Traceback (most recent call last):\n"
       "  File \"/srv/widget/stats.py\", line 10, in rate\n"
       "    return total // count\n"
       "ZeroDivisionError: integer division or modulo by zero",
       "unknown"},
      {"vllm-project/vllm vllm/model_executor/layers/quantization/awq.py create_weights (TP 4)",
       "INFO 03-01 10:00:00 llm_engine.py:100] Initializing an LLM engine (v0.4.2) with config: "
       "model='/models/widget-awq', tokenizer='/models/widget-awq', tensor_parallel_size=4, quantization=awq\n"
       "ValueError: The input size is not aligned with the quantized weight shape. This can be caused by too "
       "large tensor parallel size.",
       "tp_not_divisible_heads"},
      {"vllm-project/vllm vllm/model_executor/layers/quantization/awq.py create_weights (TP 1: not the TP)",
       "INFO 03-01 10:00:00 llm_engine.py:100] Initializing an LLM engine (v0.4.2) with config: "
       "model='/models/widget-awq', tokenizer='/models/widget-awq', tensor_parallel_size=1, quantization=awq\n"
       "ValueError: The output size is not aligned with the quantized weight shape. This can be caused by too "
       "large tensor parallel size.",
       "unknown"},
      {"vllm-project/vllm vllm/model_executor/layers/quantization/utils/marlin_utils.py "
       "verify_marlin_supports_shape (TP 2)",
       "INFO 03-01 10:00:00 [core.py:60] Initializing a V1 LLM engine (v0.9.0) with config: "
       "model='/models/widget-gptq', quantization=gptq_marlin, tensor_parallel_size=2, pipeline_parallel_size=1\n"
       "ValueError: Weight output_size_per_partition = 1408 is not divisible by  min_thread_n = 64. Consider "
       "reducing tensor_parallel_size or running with --quantization gptq.",
       "tp_not_divisible_heads"},
      {"vllm-project/vllm marlin_utils.py verify_marlin_supports_shape (TP 1: the model's shape, not the TP)",
       "INFO 03-01 10:00:00 [core.py:60] Initializing a V1 LLM engine (v0.9.0) with config: "
       "model='/models/widget-awq', quantization=awq_marlin, tensor_parallel_size=1, pipeline_parallel_size=1\n"
       "ValueError: Weight input_size_per_partition = 10944 is not divisible by min_thread_k = 128. Consider "
       "reducing tensor_parallel_size or running with --quantization gptq.",
       "unknown"},
      {"AutoGPTQ/AutoGPTQ auto_gptq/nn_modules/qlinear/qlinear_exllama.py QuantLinear.__init__",
       "ValueError: Trying to use the exllama backend, but could not import the C++/CUDA dependencies with the "
       "following error: No module named 'exllama_kernels'",
       "missing_custom_op"},
      {"ModelCloud/GPTQModel gptqmodel/nn_modules/qlinear/marlin.py MarlinQuantLinear.__init__",
       "ValueError: Trying to use the marlin backend, but could not import the C++/CUDA dependencies with the "
       "following error: cannot import name 'gptqmodel_marlin_kernels'",
       "missing_custom_op"},
      {"ModelCloud/GPTQModel qlinear/exllamav2.py (the import error is a library the loader cannot find)",
       "ValueError: Trying to use the exllama v2 backend, but could not import the C++/CUDA dependencies with the "
       "following error: libcudart.so.11.0: cannot open shared object file: No such file or directory",
       "shared_lib_undefined_symbol"},
      {"casper-hansen/AutoAWQ awq/modules/fused/norm.py (unguarded import awq_ext)",
       "Traceback (most recent call last):\n"
       "  File \"/env/lib/python3.10/site-packages/awq/modules/fused/norm.py\", line 3, in <module>\n"
       "    import awq_ext  # with CUDA kernels\n"
       "ModuleNotFoundError: No module named 'awq_ext'",
       "missing_custom_op"},
      {"AutoGPTQ/AutoGPTQ qlinear_cuda.py (the guarded import only warns; the run goes on)",
       "WARNING - CUDA extension not installed.\n"
       "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
       "unknown"},
      {"huggingface/text-embeddings-inference backends/candle/src/lib.rs CandleBackend::new (model_type)",
       "Error: Could not create backend\n\n"
       "Caused by:\n"
       "    Could not start backend: Model is not supported\n\n"
       "    Caused by:\n"
       "        unknown variant `widget3`, expected one of `bert`, `xlm-roberta`, `camembert`, `roberta`, "
       "`distilbert`, `nomic_bert`, `mistral`, `new`, `qwen2` at line 20 column 25",
       "unsupported_model_architecture"},
      {"huggingface/text-embeddings-inference backends/candle/src/lib.rs (another serde error: not the arch)",
       "Error: Could not create backend\n\n"
       "Caused by:\n"
       "    Could not start backend: Model is not supported\n\n"
       "    Caused by:\n"
       "        missing field `hidden_act` at line 30 column 1",
       "unknown"},
      {"huggingface/text-embeddings-inference backends/candle/src/lib.rs (compute_cap.rs)",
       "Error: Could not create backend\n\n"
       "Caused by:\n"
       "    Could not start backend: Runtime compute cap 75 is not compatible with compile time compute cap 80",
       "unsupported_gpu_arch_runtime"},
      {"huggingface/text-embeddings-inference backends/candle/src/lib.rs (fp16 / flash attention / CPU: several causes)",
       "Error: Could not create backend\n\n"
       "Caused by:\n"
       "    Could not start backend: Qwen2 is only supported on Cuda devices in fp16 with flash attention enabled",
       "unknown"},
      {"pytorch/pytorch torch/__init__.py _load_dll_libraries (WinError 193 on a DLL)",
       "OSError: [WinError 193] %1 is not a valid Win32 application. Error loading "
       "\"C:\\\\env\\\\Lib\\\\site-packages\\\\torch\\\\lib\\\\cudnn64_9.dll\" or one of its dependencies.",
       "shared_lib_undefined_symbol"},
      {"pytorch/pytorch torch/__init__.py _load_dll_libraries (WinError 1114 on a DLL)",
       "OSError: [WinError 1114] A dynamic link library (DLL) initialization routine failed. Error loading "
       "\"C:\\\\env\\\\Lib\\\\site-packages\\\\torch\\\\lib\\\\c10.dll\" or one of its dependencies.",
       "shared_lib_undefined_symbol"},
      {"CPython subprocess on Windows (WinError 193 starting a program, no DLL)",
       "OSError: [WinError 193] %1 is not a valid Win32 application",
       "unknown"},
      {"NVIDIA driver under WSL (nvidia-smi / NVML: the device is not visible)",
       "Failed to initialize NVML: GPU access blocked by the operating system",
       "unknown"},
      {"vllm-project/vllm vllm/lora/worker_manager.py _load_adapter (path typo or a merged model: several causes)",
       "ValueError: Loading lora widget-sql failed: No adapter found for /data/loras/widget-sql",
       "unknown"},
      {"huggingface/peft src/peft/config.py PeftConfigMixin.from_pretrained (no adapter_config.json: several causes)",
       "ValueError: Can't find 'adapter_config.json' at '/data/loras/widget-sql'",
       "unknown"},
      {"vllm-project/vllm vllm/lora/worker_manager.py _load_adapter (rank above --max-lora-rank: a flag)",
       "ValueError: LoRA rank 128 is greater than max_lora_rank 64.",
       "unknown"},
      {"vllm-project/vllm vllm/lora/models.py from_local_checkpoint (target modules the engine does not take)",
       "ValueError: While loading /data/loras/widget, expected target modules in ['q_proj', 'k_proj', 'v_proj', "
       "'o_proj'] but received ['lm_head']. Please verify that the loaded LoRA module is correct",
       "unknown"},
      {"vllm-project/vllm vllm/model_executor/model_loader/loader.py (LoRA asked of a model without LoRA support)",
       "ValueError: Model WidgetForCausalLM does not support LoRA, but LoRA is enabled. Support for this model "
       "may be added in the future. If this is important to you, please open an issue on github.",
       "unknown"},
      {"pytorch/pytorch nn/modules/module.py load_state_dict (an adapter trained on another base)",
       "RuntimeError: Error(s) in loading state_dict for PeftModelForCausalLM:\n"
       "\tsize mismatch for base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight: copying a "
       "param with shape torch.Size([8, 4096]) from checkpoint, the shape in current model is "
       "torch.Size([8, 5120]).",
       "unknown"},
      {"vllm-project/vllm vllm/config.py _verify_quantization (the flag and the checkpoint disagree)",
       "ValueError: Quantization method specified in the model config (gptq) does not match the quantization "
       "method specified in the `quantization` argument (awq).",
       "unknown"},
      {"vllm-project/vllm vllm/model_executor/layers/quantization/awq.py AWQConfig (a bit width it lacks)",
       "ValueError: Currently, only 4-bit weight quantization is supported for AWQ, but got 8 bits.",
       "unknown"},
      {"huggingface/transformers src/transformers/quantizers/quantizer_bnb_4bit.py (an old bitsandbytes)",
       "ImportError: Using `bitsandbytes` 4-bit quantization requires the latest version of bitsandbytes: "
       "`pip install -U bitsandbytes`",
       "unknown"},
      {"huggingface/transformers src/transformers/image_processing_base.py get_image_processor_dict "
       "(no processor file: a path or another format, several causes)",
       "OSError: Can't load image processor for '/models/widget-vl'. If you were trying to load it from "
       "'https://huggingface.co/models', make sure you don't have a local directory with the same name. "
       "Otherwise, make sure '/models/widget-vl' is the correct path to a directory containing a "
       "preprocessor_config.json file",
       "unknown"},
      {"InternLM/lmdeploy lmdeploy/turbomind/chat.py (a converted workspace's tokenizer folder given to transformers)",
       "OSError: /ws/widget-70b/triton_models/tokenizer does not appear to have a file named config.json. Checkout "
       "'https://huggingface.co//ws/widget-70b/triton_models/tokenizer/None' for available files.",
       "unknown"},
      {"huggingface/transformers src/transformers/utils/hub.py cached_file (a model folder without config.json)",
       "OSError: /ws/widget-70b does not appear to have a file named config.json. Checkout "
       "'https://huggingface.co//ws/widget-70b/None' for available files.",
       "model_path_not_found"},
      {"vllm-project/vllm vllm/worker/worker.py determine_num_available_blocks (cut in profile_run's forward)",
       "Traceback (most recent call last):\n"
       "  File \"/env/lib/python3.11/site-packages/vllm/worker/worker.py\", line 179, in determine_num_available_blocks\n"
       "    self.model_runner.profile_run()\n"
       "  File \"/env/lib/python3.11/site-packages/vllm/worker/model_runner.py\", line 923, in profile_run\n"
       "    self.execute_model(model_input, kv_caches, intermediate_tensors)\n",
       "unknown"},
      {"vllm-project/vllm vllm/engine/llm_engine.py _initialize_kv_caches (cut in the sizing itself)",
       "Traceback (most recent call last):\n"
       "  File \"/env/lib/python3.11/site-packages/vllm/engine/llm_engine.py\", line 340, in _initialize_kv_caches\n"
       "    self.model_executor.determine_num_available_blocks())\n"
       "  File \"/env/lib/python3.11/site-packages/vllm/executor/gpu_executor.py\", line 114, in "
       "determine_num_available_blocks\n"
       "    return self.driver_worker.determine_num_available_blocks()\n",
       "no_cache_blocks"},
      {"pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp watchdogHandler (2.3+ timeout wording)",
       "[rank1]:[E1003 18:37:01.833575187 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 1] Exception (either "
       "an error or timeout) detected by watchdog at work: 12, last enqueued NCCL work: 12, last completed NCCL "
       "work: 11.\n"
       "[rank1]:[E1003 18:37:01.833621509 ProcessGroupNCCL.cpp:1709] [PG 0 (default_pg) Rank 1] Timeout at NCCL "
       "work: 12, last enqueued NCCL work: 12, last completed NCCL work: 11.",
       "nccl_rccl_init_failure"},
      {"pytorch/pytorch ProcessGroupNCCL.cpp watchdogHandler (an error, not a timeout: not read)",
       "[rank1]:[E1003 18:37:01.833575187 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 1] Exception (either "
       "an error or timeout) detected by watchdog at work: 12, last enqueued NCCL work: 12, last completed NCCL "
       "work: 11.",
       "unknown"},
      {"huggingface/transformers src/transformers/quantizers/quantizer_finegrained_fp8.py validate_environment",
       "ValueError: FP8 quantized models is only supported on GPUs with compute capability >= 8.9 (e.g 4090/H100), "
       "actual = `8.0`",
       "unsupported_gpu_arch_runtime"},
      {"huggingface/transformers quantizer_finegrained_fp8.py (later: a warning, it dequantizes and goes on)",
       "FP8 quantized models is only supported on GPUs with compute capability >= 8.9 (e.g 4090/H100), actual = "
       "`8.0`. We will default to dequantizing the model to bf16. Feel free to use a different quantization method "
       "like bitsandbytes or torchao\n"
       "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
       "unknown"},
      {"vllm-project/vllm vllm/model_executor/model_loader/weight_utils.py get_quant_config (no quant config file)",
       "ValueError: Cannot find the config file for awq",
       "unknown"},
      {"huggingface/text-embeddings-inference router/src/lib.rs (no pooling given or found: a flag)",
       "Error: `--pooling` arg is not set and we could not find a pooling configuration (`1_Pooling/config.json`) "
       "for this model.",
       "unknown"},
      // -------------------------------------- twelfth rules round (stop 43)
      {"huggingface/text-generation-inference server/text_generation_server/utils/hub.py weight_hub_files (a quantised repo: another loader's format)",
       "huggingface_hub.utils._errors.EntryNotFoundError: No .bin weights found for model TheBloke/widget-13B-GPTQ and revision None.",
       "unknown"},
      {"huggingface/text-generation-inference server/text_generation_server/utils/hub.py weight_hub_files (a plain repo id)",
       "huggingface_hub.utils._errors.EntryNotFoundError: No .safetensors weights found for model acme/widget-7b and revision main.",
       "model_path_not_found"},
      {"triton-lang/triton python/triton/runtime/build.py _build (-lcuda) and GNU binutils ld/ldfile.c",
       "/usr/bin/ld: skipping incompatible /usr/lib/libcuda.so when searching for -lcuda\n"
       "/usr/bin/ld: cannot find -lcuda: No such file or directory\n"
       "collect2: error: ld returned 1 exit status",
       "shared_lib_undefined_symbol"},
      {"triton-lang/triton python/triton/runtime/build.py _build (-lcuda) and LLVM lld",
       "ld.lld: error: unable to find library -lcuda\n"
       "clang: error: linker command failed with exit code 1 (use -v to see invocation)",
       "shared_lib_undefined_symbol"},
      {"GNU binutils ld/ldfile.c (a library that is not the GPU runtime's: a build's own problem)",
       "/usr/bin/ld: cannot find -lwidget\n"
       "collect2: error: ld returned 1 exit status",
       "unknown"},
      {"vllm-project/vllm vllm/v1/attention/backends/flash_attn.py FlashAttentionImpl.__init__ (fp8 KV cache)",
       "NotImplementedError: FlashAttention does not support fp8 kv-cache on this device.",
       "unsupported_gpu_arch_runtime"},
      {"vllm-project/vllm vllm/config.py _get_and_verify_max_len (max_model_len above the model's derived maximum: a flag)",
       "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
       "  Value error, User-specified max_model_len (131072) is greater than the derived max_model_len (max_position_embeddings=32768 or model_max_length=None in model's config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. [type=value_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]",
       "unknown"},
      {"sgl-project/sglang python/sglang/srt/configs/model_config.py (context_length above the derived one: a flag)",
       "ValueError: User-specified context_length (131072) is greater than the derived context_length (32768). This may lead to incorrect model outputs or CUDA errors. Note that the derived context_length may differ from max_position_embeddings in the model's config. To allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1",
       "unknown"},
      {"ggml-org/llama.cpp src/llama-context.cpp and tools/server (a warning; the server caps the slot and starts)",
       "llama_context: n_ctx_seq (49152) > n_ctx_train (40960) -- possible training context overflow\n"
       "load_model: the slot context (49152) exceeds the training context of the model (40960) - capping\n"
       "main: server is listening on http://127.0.0.1:8080 - starting the main loop",
       "unknown"},
      {"vllm-project/vllm vllm/executor/ray_utils.py _wait_until_pg_ready (Ray cluster short of resources)",
       "ValueError: Cannot provide a placement group of placement_group_specs=[{'GPU': 1.0, 'node:10.0.0.2': 0.001}, {'GPU': 1.0}] within 1800 seconds. See `ray status` and `ray list nodes` to make sure the cluster has enough resources.",
       "unknown"},
      {"NVIDIA/nccl src/misc/shmutils.cc ncclShmOpen (a container's /dev/shm too small) via torch ProcessGroupNCCL",
       "host:42:42 [0] misc/shmutils.cc:72 NCCL WARN Error: failed to extend /dev/shm/nccl-AbCdEf to 9637892 bytes\n"
       "host:42:42 [0] misc/shmutils.cc:113 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-AbCdEf (size 9637888)\n"
       "host:42:42 [0] NCCL INFO transport/shm.cc:114 -> 2\n"
       "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
       "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
       "Last error:\n"
       "Error while creating shared memory segment /dev/shm/nccl-AbCdEf (size 9637888)",
       "nccl_rccl_init_failure"},
      {"huggingface/transformers src/transformers/tokenization_utils_base.py get_chat_template (no template: a base model or a flag)",
       "ValueError: Cannot use chat template functions because tokenizer.chat_template is not set and no template argument was passed! For information about writing templates and setting the tokenizer.chat_template attribute, please see the documentation at https://huggingface.co/docs/transformers/main/en/chat_templating",
       "unknown"},
      {"vllm-project/vllm vllm/entrypoints/chat_utils.py load_chat_template (a --chat-template path that is not there)",
       "Traceback (most recent call last):\n"
       "  File \"/usr/lib/python3/dist-packages/vllm/entrypoints/chat_utils.py\", line 1100, in load_chat_template\n"
       "    with open(chat_template) as f:\n"
       "FileNotFoundError: [Errno 2] No such file or directory: '/models/templates/widget.jinja'\n"
       "\n"
       "The above exception was the direct cause of the following exception:\n"
       "\n"
       "Traceback (most recent call last):\n"
       "  File \"/usr/lib/python3/dist-packages/vllm/entrypoints/chat_utils.py\", line 1110, in load_chat_template\n"
       "    raise ValueError(msg) from e\n"
       "ValueError: The supplied chat template (/models/templates/widget.jinja) looks like a file path, but it failed to be opened. Tried: /models/templates/widget.jinja and /usr/lib/python3/dist-packages/vllm/transformers_utils/chat_templates/widget.jinja. Reason: [Errno 2] No such file or directory: '/models/templates/widget.jinja'",
       "unknown"},
      {"vllm-project/vllm vllm/config.py SpeculativeConfig (draft-model speculation refused by this vLLM: a flag)",
       "NotImplementedError: Speculative decoding with draft model is not supported yet. Please consider using other speculative decoding methods such as ngram, medusa, eagle, or deepseek_mtp.",
       "unknown"},
      {"vllm-project/vllm vllm/engine/arg_utils.py _raise_or_fallback (a warning on a Colab T4; V0 starts)",
       "WARNING 05-10 11:48:41 [arg_utils.py:1533] Compute Capability < 8.0 is not supported by the V1 Engine. Falling back to V0.\n"
       "INFO:     Application startup complete.",
       "unknown"},
      {"triton-lang/triton (ptxas refusing bf16 below sm_80: a ptxas failure, the corpus's triton_kernel_compile_failure call)",
       "RuntimeError: Internal Triton PTX codegen error: \n"
       "ptxas /tmp/tmpab12cd.ptx, line 212; error   : Feature '.bf16' requires .target sm_80 or higher\n"
       "ptxas fatal   : Ptx assembly aborted due to errors",
       "triton_kernel_compile_failure"},
      {"pytorch/pytorch torch/xpu/__init__.py _lazy_init (a torch without XPU on an Intel GPU host)",
       "AssertionError: Torch not compiled with XPU enabled",
       "wrong_platform_build"},
      {"HabanaAI pytorch integration synapse_helpers (an HPU the runtime cannot acquire: absent or held)",
       "RuntimeError: synStatus=8 [Device not found] Device acquire failed.",
       "unknown"},
      {"ggml-org/llama.cpp ggml/src/ggml-vulkan/ggml-vulkan.cpp (no Vulkan device: a device not visible; it runs on the CPU)",
       "ggml_vulkan: No devices found.\n"
       "llama_model_load_from_file_impl: using device CPU",
       "unknown"},
      {"vllm-project/vllm vllm/attention/backends/flash_attn.py FlashAttentionMetadataBuilder.build (Gemma-2's soft cap needs FlashInfer: a backend flag), raised in the profile run",
       "[rank0]: Traceback (most recent call last):\n"
       "[rank0]:   File \"/env/lib/python3.10/site-packages/vllm/worker/worker.py\", line 223, in determine_num_available_blocks\n"
       "[rank0]:     self.model_runner.profile_run()\n"
       "[rank0]:   File \"/env/lib/python3.10/site-packages/vllm/attention/backends/flash_attn.py\", line 286, in build\n"
       "[rank0]:     raise ValueError(\n"
       "[rank0]: ValueError: Please use Flashinfer backend for models with logits_soft_cap (i.e., Gemma-2). Otherwise, the output might be wrong. Set Flashinfer backend by export VLLM_ATTENTION_BACKEND=FLASHINFER.",
       "unknown"},
      {"vllm-project/vllm vllm/config.py LoRAConfig.verify_with_scheduler_config (two flags that do not go together)",
       "ValueError: LoRA is not supported with chunked prefill yet.",
       "unknown"},
      {"vllm-project/vllm vllm/executor/ray_distributed_executor.py _init_workers_ray (no GPU for the driver in the placement group)",
       "ValueError: Ray does not allocate any GPUs on the driver node. Consider adjusting the Ray placement group or running the driver on a GPU node.",
       "unknown"},
      {"huggingface/text-generation-inference server/text_generation_server/models/custom_modeling/flash_*_modeling.py (heads over shards)",
       "ValueError: `num_heads` must be divisible by `num_shards` (got `num_heads`: 14 and `num_shards`: 4",
       "tp_not_divisible_heads"},
      {"triton-lang/triton build.py with GNU ld: the 32-bit copy skipped, the 64-bit one found (a healthy start-up)",
       "/usr/bin/ld: skipping incompatible /usr/lib/libcuda.so when searching for -lcuda\n"
       "INFO:     Application startup complete.",
       "unknown"},
      {"huggingface/transformers src/transformers/tokenization_utils_fast.py (fixed text for a missing optional package, another format or unreadable files)",
       "ValueError: Couldn't instantiate the backend tokenizer from one of: \n"
       "(1) a `tokenizers` library serialization file, \n"
       "(2) a slow tokenizer instance to convert or \n"
       "(3) an equivalent slow tokenizer class to instantiate and convert. \n"
       "You need to have sentencepiece or tiktoken installed to convert a slow tokenizer to a fast one.",
       "unknown"},
      {"huggingface/text-generation-inference server/text_generation_server/layers/attention/kv_cache.py KVCache (e5m2 on ROCm: a flag)",
       "ValueError: float8_e5m2 FP8 KV cache is not supported on AMD ROCm",
       "unknown"},
      {"NVIDIA/nccl src/misc/ibvwrap.cc wrap_ibv_reg_mr (memlock limit in a container or a Slurm job) via torch ProcessGroupNCCL",
       "host:7:7 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.2<0>\n"
       "host:7:120 [0] misc/ibvwrap.cc:191 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory\n"
       "host:7:120 [0] NCCL INFO transport/net_ib.cc:745 -> 2\n"
       "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
       "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
       "Last error:\n"
       "Call to ibv_reg_mr failed with error Cannot allocate memory",
       "nccl_rccl_init_failure"},
      {"google/jax jax/_src/xla_bridge.py backends() (INFO lines on a GPU host: the TPU and ROCm back-ends are probed and skipped)",
       "INFO:jax._src.xla_bridge:Unable to initialize backend 'rocm': NOT_FOUND: Could not find registered platform with name: \"rocm\". Available platform names are: CUDA\n"
       "INFO:jax._src.xla_bridge:Unable to initialize backend 'tpu': INTERNAL: Failed to open libtpu.so: libtpu.so: cannot open shared object file: No such file or directory\n"
       "INFO:     Application startup complete.",
       "unknown"},
      {"google/jax jax/_src/xla_bridge.py with libtpu (the TPU held by another process: no class)",
       "RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by process with pid 4242. Not attempting to load libtpu.so in this process.",
       "unknown"},
      {"tensorflow/tsl tsl/platform/default/dso_loader.cc (TensorFlow imported alongside; a warning, it goes on)",
       "2023-06-01 10:00:00.000000: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load "
       "dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such "
       "file or directory\n"
       "2023-06-01 10:00:00.000001: I tensorflow/stream_executor/cuda/cudart_stub.cc:29] Ignore above cudart dlerror "
       "if you do not have a GPU set up on your machine.\n"
       "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
       "unknown"},
      {"pytorch/vision torchvision/io/image.py (optional image codecs; a warning, it goes on)",
       "/env/lib/python3.10/site-packages/torchvision/io/image.py:13: UserWarning: Failed to load image Python "
       "extension: 'libc10_cuda.so: cannot open shared object file: No such file or directory'If you don't plan on "
       "using image functionality from `torchvision.io`, you can ignore this warning. Otherwise, there might be "
       "something wrong with your environment.\n"
       "  warn(\n"
       "INFO:     Application startup complete.",
       "unknown"},
      {"pytorch/pytorch c10/core/impl/DeviceGuardImplInterface.h getDeviceGuardImpl (a torch without the XPU back-end)",
       "RuntimeError: PyTorch is not linked with support for xpu devices",
       "wrong_platform_build"},
      {"pytorch/pytorch DeviceGuardImplInterface.h getDeviceGuardImpl (npu: torch_npu not imported, a plug-in)",
       "RuntimeError: PyTorch is not linked with support for npu devices",
       "unknown"},
      {"intel/llvm SYCL runtime via ggml-sycl (no Level Zero/OpenCL GPU visible: a device not visible)",
       "terminate called after throwing an instance of 'sycl::_V1::runtime_error'\n"
       "  what():  No device of requested type available. Please check "
       "https://software.intel.com/content/www/us/en/develop/articles/intel-oneapi-dpcpp-system-requirements.html "
       "-1 (PI_ERROR_DEVICE_NOT_FOUND)\n"
       "Aborted (core dumped)",
       "unknown"},
      {"vllm-project/vllm vllm/config.py CacheConfig.verify_prefix_caching (prefix caching with a sliding window: a flag)",
       "NotImplementedError: Prefix caching is not supported with sliding window. Run with --disable-sliding-window to use prefix caching.",
       "unknown"},
      {"vllm-project/vllm vllm/model_executor/models/utils.py AutoWeightsLoader (a checkpoint tensor the model class lacks: version, format or quantisation alike)",
       "ValueError: There is no module or parameter named 'model.layers.0.mlp.gate.e_score_correction_bias' in WidgetMoEForCausalLM",
       "unknown"},
      // ------------------------------------------- thirteenth rules round
      {"NVIDIA/TensorRT-LLM cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp KVCacheManager (TLLM_CHECK_WITH_INFO)",
       "[TensorRT-LLM][INFO] Max KV cache pages per sequence: 64\n"
       "[TensorRT-LLM][ERROR] Assertion failed: maxTokensInPagedKvCache (2048) must be large enough to process at least 1 sequence to completion "
       "(i.e. must be larger than beam_width (1) * tokensPerBlock (64) * maxBlocksPerSeq (64)) "
       "(/src/tensorrt_llm/cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp:412)",
       "max_model_len_exceeds_kv_capacity"},
      {"NVIDIA/TensorRT-LLM kvCacheManager.cpp (early 0.x wording, through the Triton backend's model instance)",
       "E0101 10:00:00.000000 1 backend_model.cc:634] ERROR: Failed to create instance: unexpected error when creating "
       "modelInstanceState: maxTokensInPagedKvCache must be large enough to process at least 1 sequence to completion "
       "(i.e. must be larger than beam_width * tokensPerBlock * maxBlocksPerSeq)",
       "max_model_len_exceeds_kv_capacity"},
      {"vllm-project/vllm vllm/_custom_ops.py (the _C warning on a built-in CUDA platform, nothing later)",
       "INFO 01-01 10:00:00 [__init__.py:239] Automatically detected platform cuda.\n"
       "WARNING 01-01 10:00:01 [_custom_ops.py:21] Failed to import from vllm._C with ModuleNotFoundError(\"No module named 'vllm._C'\")",
       "missing_custom_op"},
      {"vllm-project/vllm vllm/_custom_ops.py under an out-of-tree platform plugin (vllm/platforms/__init__.py: routine there)",
       "INFO 01-01 10:00:00 [__init__.py:44] plugin widget loaded.\n"
       "INFO 01-01 10:00:00 [__init__.py:230] Platform plugin widget is activated\n"
       "WARNING 01-01 10:00:01 [_custom_ops.py:21] Failed to import from vllm._C with ModuleNotFoundError(\"No module named 'vllm._C'\")\n"
       "INFO 01-01 10:00:05 [model_runner.py:943] Starting to load model /models/x...\n"
       "ERROR 01-01 10:00:06 [engine.py:448] 'model.layers.0.mlp.up_proj.qweight'",
       "unknown"},
      {"vllm-project/vllm vllm/_custom_ops.py under a platform plugin, with the raised import error of the plug-in's own ops",
       "INFO 01-01 10:00:00 [__init__.py:230] Platform plugin ascend is activated\n"
       "WARNING 01-01 10:00:01 [_custom_ops.py:21] Failed to import from vllm._C with ModuleNotFoundError(\"No module named 'vllm._C'\")\n"
       "ModuleNotFoundError: No module named 'vllm_ascend.vllm_ascend_C'",
       "missing_custom_op"},
      {"InternLM/lmdeploy lmdeploy/model.py HFChatTemplate (built by name, the default model_path '': a template option)",
       "ValueError: Try apply_chat_template failed: Repo id must use alphanumeric chars or '-', '_', '.', '--' and '..' "
       "are forbidden, '-' and '.' cannot start or end the name, max length is 96: ''.",
       "unknown"},
      {"huggingface/huggingface_hub utils/_validators.py validate_repo_id (a local path that is not there, unwrapped: still the model)",
       "huggingface_hub.errors.HFValidationError: Repo id must use alphanumeric chars or '-', '_', '.', '--' and '..' "
       "are forbidden, '-' and '.' cannot start or end the name, max length is 96: '/models/widget-7b'.",
       "model_path_not_found"},
      {"abetlen/llama-cpp-python llama_cpp/llama.py Llama.from_pretrained (no repository file matches the name)",
       "  File \"/usr/local/lib/python3.11/site-packages/llama_cpp/llama.py\", line 2292, in from_pretrained\n"
       "    raise ValueError(\n"
       "ValueError: No file found in widget-org/Widget-7B-GGUF that match *q4_k_m.gguf\n"
       "\n"
       "Available Files:\n"
       "[\".gitattributes\", \"README.md\", \"widget-7b.Q8_0.gguf\"]",
       "model_path_not_found"},
      {"abetlen/llama-cpp-python llama_cpp/llama.py Llama.from_pretrained (a pattern that names several files: which one is the user's)",
       "ValueError: Multiple files found in widget-org/Widget-7B-GGUF matching *.gguf\n"
       "\n"
       "Available Files:\n"
       "[\"widget-7b.Q4_K_M.gguf\", \"widget-7b.Q8_0.gguf\"]",
       "unknown"},
      {"huggingface/huggingface_hub src/huggingface_hub/utils/_http.py OfflineAdapter (raised on a code path that does not honour HF_HUB_OFFLINE: the model may be cached)",
       "  File \"/usr/local/lib/python3.12/dist-packages/huggingface_hub/utils/_http.py\", line 107, in send\n"
       "    raise OfflineModeIsEnabled(\n"
       "huggingface_hub.errors.OfflineModeIsEnabled: Cannot reach https://huggingface.co/widget-org/Widget-7B/resolve/main/"
       "hf_quant_config.json: offline mode is enabled. To disable it, please unset the `HF_HUB_OFFLINE` environment variable.",
       "unknown"},
      {"huggingface/huggingface_hub _snapshot_download.py (offline with nothing cached: still read)",
       "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find an appropriate cached snapshot folder for the specified "
       "revision on the local disk and outgoing traffic has been disabled. To enable repo look-ups and downloads online, set "
       "'HF_HUB_OFFLINE=0' as environment variable.",
       "model_path_not_found"},
      {"huggingface/huggingface_hub utils/_http.py hf_raise_for_status (gated repo, access request pending)",
       "huggingface_hub.errors.GatedRepoError: 403 Client Error. (Request ID: Root=1-6700aaaa-0123456789abcdef)\n"
       "\n"
       "Cannot access gated repo for url https://huggingface.co/widget-org/Widget-8B/resolve/main/config.json.\n"
       "Your request to access model widget-org/Widget-8B is awaiting a review from the repo authors.",
       "model_path_not_found"},
      {"psf/requests adapters.py (SSLError) via huggingface_hub: the hub's model API unreachable behind a proxy's certificate",
       "requests.exceptions.SSLError: (MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded "
       "with url: /api/models/widget-org/Widget-7B/revision/main (Caused by SSLError(SSLCertVerificationError(1, '[SSL: "
       "CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain (_ssl.c:1006)')))\"), "
       "'(Request ID: 0123abcd)')",
       "model_path_not_found"},
      {"encode/httpx ConnectError (huggingface_hub 1.x): a certificate failure that names no host (the hub, a proxy, a telemetry call alike)",
       "httpx.ConnectError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate (_ssl.c:1006)",
       "unknown"},
      {"pytorch/pytorch aten/src/ATen/mps (an op without an MPS kernel: PYTORCH_ENABLE_MPS_FALLBACK or a newer torch, no class)",
       "NotImplementedError: The operator 'aten::widget_op.out' is not currently implemented for the MPS device. If you want "
       "this op to be added in priority during the prototype phase of this feature, please comment on "
       "https://github.com/pytorch/pytorch/issues/77764. As a temporary fix, you can set the environment variable "
       "`PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op. WARNING: this will be slower than running "
       "natively on MPS.",
       "unknown"},
      {"huggingface/transformers models/auto/configuration_auto.py (a new MoE family, transformers too old; current wording)",
       "ValueError: The checkpoint you are trying to load has model type `widget3_moe` but Transformers does not recognize this "
       "architecture. This could be because of an issue with the checkpoint, or because your version of Transformers is out of "
       "date.\n"
       "\n"
       "You can update Transformers with the command `pip install --upgrade transformers`. If this does not work, and the "
       "checkpoint is very new, then there may not be a release version that supports this model yet. In this case, you can "
       "get the most up-to-date code by installing Transformers from source with the command `pip install "
       "git+https://github.com/huggingface/transformers.git`",
       "unsupported_model_architecture"},
      {"ggml-org/llama.cpp src/llama-model-loader.cpp / llama-arch.cpp (a GGUF MoE architecture this build does not know)",
       "llama_model_loader: - kv   0:                       general.architecture str              = widgetmoe\n"
       "llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'widgetmoe'\n"
       "llama_load_model_from_file: failed to load model",
       "unsupported_model_architecture"},
      {"ollama/ollama llm/server.go (the runner's llama.cpp error relayed: a GGUF architecture this Ollama does not know)",
       "Error: llama runner process has terminated: error loading model: error loading model architecture: unknown model "
       "architecture: 'widgetmoe'",
       "unsupported_model_architecture"},
      {"huggingface/transformers integrations/ggml.py / modeling_gguf_pytorch_utils.py (a GGUF MoE architecture transformers does not read)",
       "ValueError: GGUF model with architecture widgetmoe is not supported yet.",
       "unsupported_model_architecture"},
      {"vllm-project/vllm vllm/lora/layers/fused_moe.py (expert parallel with MoE LoRA: a feature combination, a flag)",
       "AssertionError: EP support for Fused MoE LoRA is not implemented yet.",
       "unknown"},
      {"EleutherAI/lm-evaluation-harness lm_eval/api/registry.py get_model (a harness option, no engine started)",
       "ValueError: Attempted to load model 'vlm', but no model for this name found! Supported model names: local-completions, "
       "hf, huggingface, vllm, sglang",
       "unknown"},
      {"EleutherAI/lm-evaluation-harness lm_eval/models/vllm_causallms.py (its frames around vLLM's own error: the engine's error decides)",
       "Traceback (most recent call last):\n"
       "  File \"/opt/venv/bin/lm_eval\", line 8, in <module>\n"
       "    sys.exit(cli_evaluate())\n"
       "  File \"/opt/venv/lib/python3.11/site-packages/lm_eval/__main__.py\", line 389, in cli_evaluate\n"
       "    results = evaluator.simple_evaluate(\n"
       "  File \"/opt/venv/lib/python3.11/site-packages/lm_eval/models/vllm_causallms.py\", line 164, in __init__\n"
       "    self.model = LLM(**self.model_args)\n"
       "ValueError: To serve at least one request with the models's max seq len (32768), (4.00 GiB KV cache is needed, which "
       "is larger than the available KV cache memory (2.50 GiB). Based on the available memory, the estimated maximum model "
       "length is 20480. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
       "max_model_len_exceeds_kv_capacity"},
      {"open-compass/opencompass opencompass/runners/local.py (the runner's summary line alone: the task's .out holds the cause)",
       "01/01 10:00:00 - OpenCompass - ERROR - /opt/opencompass/opencompass/runners/local.py - _launch - 241 - task "
       "OpenICLInfer[widget-7b-vllm/gsm8k] fail, see\n"
       "outputs/default/20260101_100000/logs/infer/widget-7b-vllm/gsm8k.out",
       "unknown"},
      {"open-compass/opencompass runners/local.py with the task's output shown (vLLM's own check decides)",
       "ValueError: Total number of attention heads (14) must be divisible by tensor parallel size (4).\n"
       "01/01 10:00:00 - OpenCompass - ERROR - /opt/opencompass/opencompass/runners/local.py - _launch - 241 - task "
       "OpenICLInfer[widget-7b-vllm/gsm8k] fail, see\n"
       "outputs/default/20260101_100000/logs/infer/widget-7b-vllm/gsm8k.out",
       "tp_not_divisible_heads"},
      {"vllm-project/vllm vllm/model_executor/layers/fused_moe/oracle/mxfp4.py select_mxfp4_moe_backend (an old GPU, a batch-invariant run, a ROCm env alike)",
       "NotImplementedError: No MXFP4 MoE backend supports the deployment configuration.",
       "unknown"},
      {"vllm-project/vllm vllm/model_executor/layers/quantization/mxfp4.py Mxfp4MoEMethod (first gpt-oss releases; several causes)",
       "AssertionError: No MXFP4 MoE backend (FlashInfer/Marlin/Triton) available.Please check your environment and try again.",
       "unknown"},
      {"vllm-project/vllm attention selector (a forced backend that does not take the KV-cache dtype: a flag)",
       "ValueError: Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this configuration. Reason: ['kv_cache_dtype not supported']",
       "unknown"},
      {"vllm-project/vllm attention selector (gpt-oss sinks on a forced backend: a flag)",
       "ValueError: Selected backend AttentionBackendEnum.FLASHINFER is not valid for this configuration. Reason: ['sink setting not supported']",
       "unknown"},
      {"vllm-project/vllm attention selector (a dense MLA backend forced on a sparse-attention model: a flag)",
       "ValueError: Selected backend AttentionBackendEnum.TRITON_MLA is not valid for this configuration. Reason: ['sparse not supported']",
       "unknown"},
      {"vllm-project/vllm attention selector (an MLA backend forced on a GPU it does not run on)",
       "ValueError: Selected backend AttentionBackendEnum.FLASHMLA is not valid for this configuration. Reason: ['compute capability not supported']",
       "unsupported_gpu_arch_runtime"},
      {"ml-explore/mlx python/mlx/nn/layers/base.py Module.load_weights (strict: a checkpoint with towers the model class lacks, or an mlx-lm too old alike)",
       "ValueError: Received 126 parameters not in model: \n"
       "vision_tower.encoder.layers.0.mlp.fc1.weight,\n"
       "vision_tower.encoder.layers.0.mlp.fc2.weight.",
       "unknown"},
      {"ml-explore/mlx python/mlx/nn/layers/base.py Module.load_weights (missing parameters)",
       "ValueError: Missing 2 parameters: \n"
       "multi_modal_projector.layer_norm.bias,\n"
       "multi_modal_projector.layer_norm.weight.",
       "unknown"},
      {"huggingface/huggingface_hub utils/_http.py hf_raise_for_status under lm-evaluation-harness lm_eval/api/task.py download (a gated benchmark, not the model)",
       "  File \"/opt/venv/lib/python3.11/site-packages/lm_eval/api/task.py\", line 930, in download\n"
       "    self.dataset = datasets.load_dataset(\n"
       "huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-6700aaaa-0123456789abcdef)\n"
       "\n"
       "Cannot access gated repo for url https://huggingface.co/datasets/widget-org/widget-bench/resolve/main/widget-bench.py.\n"
       "Access to dataset widget-org/widget-bench is restricted. You must have access to it and be authenticated to access it. Please log in.",
       "unknown"},
      {"huggingface/huggingface_hub hf_raise_for_status (a benchmark's data set not found: not the model)",
       "huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. (Request ID: Root=1-6700aaaa-0123456789abcdef)\n"
       "\n"
       "Repository Not Found for url: https://huggingface.co/api/datasets/widget-org/widget-bench/revision/main.\n"
       "Please make sure you specified the correct `repo_id` and `repo_type`.\n"
       "If you are trying to access a private or gated repo, make sure you are authenticated.",
       "unknown"},
      {"huggingface/datasets src/datasets/load.py dataset_module_factory (offline or unreachable hub for a benchmark's data)",
       "ConnectionError: Couldn't reach 'widget-org/widget-bench' on the Hub (LocalEntryNotFoundError)",
       "unknown"},
      {"huggingface/datasets src/datasets/load.py (a gated benchmark, the datasets wording)",
       "datasets.exceptions.DatasetNotFoundError: Dataset 'widget-org/widget-bench' is a gated dataset on the Hub. You must be authenticated to access it.",
       "unknown"},
      {"huggingface/huggingface_hub hf_raise_for_status (the model's own repository, gated: still read)",
       "huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-6700aaaa-0123456789abcdef)\n"
       "\n"
       "Cannot access gated repo for url https://huggingface.co/widget-org/Widget-8B/resolve/main/config.json.\n"
       "Access to model widget-org/Widget-8B is restricted. You must have access to it and be authenticated to access it. Please log in.",
       "model_path_not_found"},
      {"huggingface/huggingface_hub hf_raise_for_status (429: rate-limited, transient)",
       "huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: https://huggingface.co/api/models/widget-org/Widget-7B/revision/main",
       "unknown"},
      {"huggingface/huggingface_hub file_download.py (a download cut short: retry with force_download)",
       "OSError: Consistency check failed: file should be of size 4976698672 but has size 1307236352 (model-00001-of-00004.safetensors).\n"
       "We are sorry for the inconvenience. Please retry with `force_download=True`.\n"
       "If the issue persists, please let us know by opening an issue on https://github.com/huggingface/huggingface_hub.",
       "unknown"},
      {"huggingface/transformers dynamic_module_utils.py resolve_trust_remote_code (a flag)",
       "ValueError: The repository for widget-org/Widget-7B contains custom code which must be executed to correctly load the model. "
       "You can inspect the repository content at https://hf.co/widget-org/Widget-7B.\n"
       "Please pass the argument `trust_remote_code=True` to allow custom code to be run.",
       "unknown"},
      {"EleutherAI/lm-evaluation-harness local-completions (psf/requests: the engine it points at is not up; the engine's own log decides)",
       "requests.exceptions.ConnectionError: HTTPConnectionPool(host='localhost', port=8000): Max retries exceeded with url: "
       "/v1/completions (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f00>: Failed to establish "
       "a new connection: [Errno 111] Connection refused'))",
       "unknown"},
      {"ggml-org/llama.cpp src/llama-model-loader.cpp create_tensor (a GGUF converted for another revision of the architecture, a broken conversion alike)",
       "llama_model_load: error loading model: missing tensor 'blk.0.ffn_gate_exps.weight'\n"
       "llama_load_model_from_file: failed to load model",
       "unknown"},
      {"ggml-org/llama.cpp ggml/src/ggml-metal (kernels an older Apple GPU lacks are skipped: a healthy start)",
       "ggml_metal_init: skipping kernel_mul_mm_bf16_f32                   (not supported)\n"
       "ggml_metal_init: skipping kernel_mul_mv_id_bf16_f32                (not supported)\n"
       "main: server is listening on http://127.0.0.1:8080 - starting the main loop",
       "unknown"},
      {"pytorch/pytorch aten/src/ATen/mps/MPSAllocator / OperationUtils (float64 on MPS: a dtype choice)",
       "TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. Please use float32 instead.",
       "unknown"},
      {"pytorch/pytorch aten/src/ATen/native/mps (bf16 on macOS < 14: the OS, not a GPU arch; float16 or an OS upgrade)",
       "TypeError: MPS BFloat16 is only supported on MacOS 14 or newer",
       "unknown"},
      {"huggingface/huggingface_hub file_download.py http_get (hf_transfer failed mid-download: transient, no class)",
       "RuntimeError: An error occurred while downloading using `hf_transfer`. Consider disabling HF_HUB_ENABLE_HF_TRANSFER for better error handling.",
       "unknown"},
      {"huggingface/huggingface_hub file_download.py (HF_HUB_ENABLE_HF_TRANSFER set without the package)",
       "ValueError: Fast download using 'hf_transfer' is enabled (HF_HUB_ENABLE_HF_TRANSFER=1) but 'hf_transfer' package is not "
       "available in your environment. Try `pip install hf_transfer`.",
       "unknown"},
      {"huggingface/huggingface_hub file_download.py (hf_xet absent: a warning, it downloads over HTTP)",
       "WARNING:huggingface_hub.file_download:Xet Storage is enabled for this repo, but the 'hf_xet' package is not installed. "
       "Falling back to regular HTTP download. For better performance, install the package with: `pip install "
       "huggingface_hub[hf_xet]` or `pip install hf_xet`\n"
       "INFO:     Application startup complete.",
       "unknown"},
      {"vllm-project/vllm vllm/config ModelConfig (pydantic) wrapping transformers' configuration_auto.py for a new MoE family",
       "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
       "  Value error, The checkpoint you are trying to load has model type `widget3_next` but Transformers does not recognize "
       "this architecture. This could be because of an issue with the checkpoint, or because your version of Transformers is "
       "out of date. [type=value_error, input_value=ArgsKwargs((), {'model': 'widget-org/Widget3-Next-80B-A3B'}), "
       "input_type=ArgsKwargs]",
       "unsupported_model_architecture"},
      {"huggingface/huggingface_hub hf_raise_for_status (a token the hub rejects, the model's API URL)",
       "huggingface_hub.errors.HfHubHTTPError: 401 Client Error: Unauthorized for url: "
       "https://huggingface.co/api/models/widget-org/Widget-7B/revision/main (Request ID: Root=1-abc)\n"
       "\n"
       "Invalid credentials in Authorization header",
       "model_path_not_found"},
      {"huggingface/transformers src/transformers/utils/hub.py cached_files (hub unreachable, nothing cached)",
       "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it in the cached files and it "
       "looks like widget-org/Widget-7B is not the path to a directory containing a file named config.json.\n"
       "Checkout your internet connection or see how to run the library in offline mode at "
       "'https://huggingface.co/docs/transformers/installation#offline-mode'.",
       "model_path_not_found"},
      {"psf/requests adapters.py (ProxyError) via modelscope/modelscope hub/api.py HubApi.get_model_branches_and_tags: ModelScope's model API unreachable",
       "requests.exceptions.ProxyError: HTTPSConnectionPool(host='www.modelscope.cn', port=443): Max retries exceeded with url: "
       "/api/v1/models/widget-org/Widget-7B/revisions?EndTime=1760000000 (Caused by ProxyError('Unable to connect to proxy', "
       "OSError('Tunnel connection failed: 407 Proxy Authentication Required')))",
       "model_path_not_found"},
      {"psf/requests via modelscope's data-set API (EvalScope's benchmark data, not the model)",
       "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='www.modelscope.cn', port=443): Max retries exceeded with "
       "url: /api/v1/datasets/widget-org/widget-bench (Caused by NameResolutionError(\"<urllib3.connection.HTTPSConnection "
       "object at 0x7f00>: Failed to resolve 'www.modelscope.cn' ([Errno -3] Temporary failure in name resolution)\"))",
       "unknown"},
      {"ggml-org/llama.cpp src/llama-model-loader.cpp get_key (a GGUF and a llama.cpp of different revisions of the architecture, either side)",
       "llama_model_load: error loading model: error loading model hyperparameters: key not found in model: widgetmoe.expert_shared_count\n"
       "llama_load_model_from_file: failed to load model",
       "unknown"},
      {"open-mmlab/mmengine mmengine/registry/build_functions.py build_from_cfg (OpenCompass's model type not registered: a harness config)",
       "KeyError: 'VLLMwithChatTemplate is not in the opencompass::model registry. Please check whether the value of "
       "`VLLMwithChatTemplate` is correct or it was registered as expected. More details can be found at "
       "https://mmengine.readthedocs.io/en/latest/advanced_tutorials/config.html#import-the-custom-module'",
       "unknown"},
      {"EleutherAI/lm-evaluation-harness __main__.py / evaluator.py lines, then vLLM's registry refusing a new MoE family (the engine decides)",
       "2025-01-01:10:00:00 INFO     [__main__.py:279] Verbosity set to INFO\n"
       "2025-01-01:10:00:06 INFO     [evaluator.py:169] Setting random seed to 0 | Setting numpy seed to 1234 | Setting torch manual seed to 1234\n"
       "INFO 01-01 10:00:10 [__init__.py:239] Automatically detected platform cuda.\n"
       "Traceback (most recent call last):\n"
       "  File \"/opt/venv/lib/python3.11/site-packages/lm_eval/models/vllm_causallms.py\", line 164, in __init__\n"
       "    self.model = LLM(**self.model_args)\n"
       "ValueError: Model architectures ['WidgetMoeForCausalLM'] are not supported for now. Supported architectures: "
       "dict_keys(['AquilaModel', 'LlamaForCausalLM'])",
       "unsupported_model_architecture"},
      {"pytorch/pytorch aten/src/ATen/mps/MPSAllocator.mm (Apple Silicon: the weights do not fit the unified memory torch may use)",
       "RuntimeError: MPS backend out of memory (MPS allocated: 17.79 GB, other allocations: 1.41 GB, max allowed: 18.13 GB). "
       "Tried to allocate 500.00 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory "
       "allocations (may cause system failure).",
       "cuda_oom_model_load"},
      {"vllm-project/vllm vllm/config ModelConfig._verify_quantization (a checkpoint's quantisation newer than the engine: another loader's format, no class)",
       "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
       "  Value error, Unknown quantization method: mxfp4. Must be one of ['aqlm', 'awq', 'fp8', 'gptq', 'compressed-tensors', "
       "'bitsandbytes']. [type=value_error, input_value=ArgsKwargs((), {'model': 'widget-org/widget-oss-20b'}), input_type=ArgsKwargs]",
       "unknown"},
      // ------------------------------- fourteenth rules round (stop 43)
      {"pytorch/pytorch aten/src/ATen/MapAllocator.cpp MapAllocator via safetensors safe_open (ENOMEM: the host cannot map the weights)",
       "  File \"/opt/venv/lib/python3.12/site-packages/vllm/model_executor/model_loader/weight_utils.py\", line 441, "
       "in safetensors_weights_iterator\n"
       "    with safe_open(st_file, framework=\"pt\") as f:\n"
       "RuntimeError: unable to mmap 9876543210 bytes from file "
       "</models/widget-13b/model-00001-of-00003.safetensors>: Cannot allocate memory (12)",
       "cuda_oom_model_load"},
      {"pytorch/pytorch aten/src/ATen/MapAllocator.cpp MapAllocator (another errno: a file system that cannot map, no class)",
       "RuntimeError: unable to mmap 9876543210 bytes from file </mnt/share/widget-13b/model.safetensors>: No such "
       "device (19)",
       "unknown"},
      {"pytorch/pytorch aten/src/ATen/MapAllocator.cpp MapAllocator (EINVAL, no class)",
       "RuntimeError: unable to mmap 0 bytes from file </models/widget/model.safetensors>: Invalid argument (22)",
       "unknown"},
      {"ggml-org/llama.cpp ggml-metal.m ggml_metal_add_buffer (a weights buffer over the device's maxBufferLength)",
       "ggml_metal_init: maxTransferRate               = built-in GPU\n"
       "ggml_metal_add_buffer: buffer 'data' size 19327352832 is larger than buffer maximum of 17179869184\n"
       "llama_init_from_file: failed to add buffer",
       "cuda_oom_model_load"},
      {"ggml-org/llama.cpp llama.cpp llm_load_tensors (early 2024: no buffer for the weights)",
       "llm_load_tensors: ggml ctx size =    0.55 MiB\n"
       "llama_model_load: error loading model: failed to allocate buffer\n"
       "llama_load_model_from_file: failed to load model",
       "cuda_oom_model_load"},
      {"ggml-org/ggml src/ggml.c ggml_init (the context's host allocation failed)",
       "llama.cpp: loading model from /models/widget-7b.q4_0.bin\n"
       "GGML_ASSERT: /build/llama.cpp/ggml.c:4411: ctx->mem_buffer != NULL\n"
       "Aborted (core dumped)",
       "cuda_oom_model_load"},
      {"ggml-org/ggml src/ggml.c (another assertion of ggml_init's neighbourhood: no class)",
       "GGML_ASSERT: /build/llama.cpp/ggml.c:4390: ctx->mem_buffer_owned\n"
       "Aborted (core dumped)",
       "unknown"},
      {"ggml-org/llama.cpp ggml-metal.m ggml_metal_graph_compute (status 5 alone: out of memory, a GPU time-out and a fault alike)",
       "ggml_metal_graph_compute: command buffer 0 failed with status 5\n"
       "GGML_ASSERT: /build/llama.cpp/ggml-metal.m:1234: false",
       "unknown"},
      {"apple-oss-distributions/xnu bsd/sys/errno.h EBADARCH via Go os/exec (a runner built for the other CPU)",
       "2024/01/01 10:00:00 llama.go:386: error starting the external llama runner: fork/exec "
       "/var/folders/xx/T/ollama123/llama.cpp/gguf/build/metal/bin/ollama-runner: bad CPU type in executable",
       "wrong_platform_build"},
      {"apple-oss-distributions/xnu bsd/sys/errno.h EBADARCH as zsh prints it",
       "zsh: bad CPU type in executable: ./llama-server",
       "wrong_platform_build"},
      {"ml-explore/mlx mlx/backend/metal/device.cpp load_default_library (a metallib built for a newer macOS)",
       "libc++abi: terminating due to uncaught exception of type std::runtime_error: [metal::Device] Failed to load "
       "the default metallib. This library is using a deployment target (0x00030000) that is not supported on this OS.",
       "wrong_platform_build"},
      {"huggingface/transformers models/auto/configuration_auto.py _LazyConfigMapping.__getitem__ in an IPython traceback",
       "File ~/venv/lib/python3.11/site-packages/transformers/models/auto/configuration_auto.py:1013, in "
       "AutoConfig.from_pretrained(cls, pretrained_model_name_or_path, **kwargs)\n"
       "   1011 config_class = CONFIG_MAPPING[config_dict[\"model_type\"]]\n"
       "File ~/venv/lib/python3.11/site-packages/transformers/models/auto/configuration_auto.py:716, in "
       "_LazyConfigMapping.__getitem__(self, key)\n"
       "    714 if key not in self._mapping:\n"
       "--> 715     raise KeyError(key)\n"
       "KeyError: 'widget_moe'",
       "unsupported_model_architecture"},
      {"IPython traceback of a KeyError outside configuration_auto (a dict lookup in user code: no class)",
       "File ~/app/load.py:12, in load(cfg)\n"
       "---> 12     return cfg['widget_moe']\n"
       "KeyError: 'widget_moe'",
       "unknown"},
      {"huggingface/huggingface_hub src/huggingface_hub/utils/_cache_manager.py scan_cache_dir (the hub cache to read the weights from does not exist)",
       "huggingface_hub.errors.CacheNotFound: Cache directory not found: /data/hf-cache/hub. Please use `cache_dir` "
       "argument or set `HF_HUB_CACHE` environment variable.",
       "model_path_not_found"},
      {"psf/requests adapters.py + python/cpython Lib/ssl.py SSLEOFError (a TLS connection cut mid-read on the hub's model API: a dropped connection, no class)",
       "urllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded "
       "with url: /api/models/widget-org/Widget-8B/revision/main (Caused by SSLError(SSLEOFError(8, '[SSL: "
       "UNEXPECTED_EOF_WHILE_READING] EOF occurred in violation of protocol (_ssl.c:1000)')))",
       "unknown"},
      {"psf/requests adapters.py SSLError: a proxy's certificate on the hub's model API (still read)",
       "requests.exceptions.SSLError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded with "
       "url: /api/models/widget-org/Widget-8B/revision/main (Caused by SSLError(SSLCertVerificationError(1, '[SSL: "
       "CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain "
       "(_ssl.c:1006)')))",
       "model_path_not_found"},
      {"pytorch/pytorch torch/cuda/__init__.py _check_driver (driver older than the wheel's CUDA: no class)",
       "AssertionError: \n"
       "The NVIDIA driver on your system is too old (found version 11040).\n"
       "Please update your GPU driver by downloading and installing a new version from the URL: "
       "http://www.nvidia.com/Download/index.aspx\n"
       "Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your "
       "version of the CUDA driver.",
       "unknown"},
      {"pytorch/pytorch c10/cuda/CUDAFunctions.cpp device_count_impl (cudaErrorSystemDriverMismatch 803: no class)",
       "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
       "before calling NumCudaDevices() that might have already set an error? Error 803: system has unsupported "
       "display driver / cuda driver combination (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)",
       "unknown"},
      {"NVIDIA nvidia-smi / NVML nvmlInit (kernel module and user-space library of different versions: no class)",
       "Failed to initialize NVML: Driver/library version mismatch\n"
       "NVML library version: 550.54",
       "unknown"},
      {"gpuopenanalytics/pynvml pynvml.py _LoadNvmlLibrary (NVMLError_LibraryNotFound: no driver library in the container, no class)",
       "pynvml.NVMLError_LibraryNotFound: NVML Shared Library Not Found",
       "unknown"},
      {"NVIDIA/libnvidia-container src/nvc.c / cli (a CUDA image newer than the host driver: no class)",
       "docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI "
       "runtime create failed: runc create failed: unable to start container process: error during container init: "
       "error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
       "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update your driver to a "
       "newer version, or use an earlier cuda container: unknown.",
       "unknown"},
      {"NVIDIA/libnvidia-container src/nvc.c (no driver library on the host: no class)",
       "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object "
       "file: no such file or directory: unknown.",
       "unknown"},
      {"NVIDIA/nvidia-container-toolkit (docker without the runtime configured: no class)",
       "docker: Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]].",
       "unknown"},
      {"cudart cudaErrorNoKernelImageForDevice via torch (a wheel without this GPU's arch)",
       "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
       "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
       "incorrect.",
       "unsupported_gpu_arch_runtime"},
      {"pytorch/pytorch torch/cuda/__init__.py _check_capability (warning: sm_120 not in the wheel's arch list)",
       "UserWarning: \n"
       "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n"
       "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.\n"
       "If you want to use the NVIDIA GeForce RTX 5090 GPU with PyTorch, please check the instructions at "
       "https://pytorch.org/get-started/locally/",
       "unsupported_gpu_arch_runtime"},
      {"huggingface/tokenizers bindings/python (serde: a tokenizer.json newer than the installed tokenizers)",
       "Exception: data did not match any variant of untagged enum ModelWrapper at line 250373 column 3",
       "config_or_tokenizer_error"},
      {"huggingface/tokenizers bindings/python Tokenizer.from_file (serde_json: an empty or HTML tokenizer.json)",
       "  File \"/opt/venv/lib/python3.11/site-packages/transformers/tokenization_utils_fast.py\", line 111, in "
       "__init__\n"
       "    fast_tokenizer = TokenizerFast.from_file(fast_tokenizer_file)\n"
       "Exception: expected value at line 1 column 1",
       "config_or_tokenizer_error"},
      {"google/sentencepiece src/sentencepiece_processor.cc Load (not a sentencepiece model: an LFS pointer)",
       "RuntimeError: Internal: src/sentencepiece_processor.cc(1101) [model_proto->ParseFromArray(serialized.data(), "
       "serialized.size())]",
       "config_or_tokenizer_error"},
      {"google/sentencepiece src/filesystem.cc ReadableFile via LoadFromFile (no tokenizer.model at the path: a wrong path or incomplete tokenizer files alike, no class)",
       "OSError: Not found: \"/models/widget-7b/tokenizer.model\": No such file or directory Error #2",
       "unknown"},
      {"openai/tiktoken tiktoken/load.py load_tiktoken_bpe (a blob cache without the file, offline)",
       "  File \"/opt/venv/lib/python3.11/site-packages/tiktoken/load.py\", line 48, in read_file_cached\n"
       "    contents = read_file(blobpath)\n"
       "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='openaipublic.blob.core.windows.net', "
       "port=443): Max retries exceeded with url: /encodings/cl100k_base.tiktoken (Caused by "
       "NameResolutionError(\"<urllib3.connection.HTTPSConnection object>: Failed to resolve "
       "'openaipublic.blob.core.windows.net'\"))",
       "unknown"},
      {"huggingface/transformers src/transformers/configuration_utils.py _dict_from_json_file (config.json not JSON)",
       "OSError: It looks like the config file at '/models/widget-7b/config.json' is not a valid JSON file.",
       "config_or_tokenizer_error"},
      {"vllm-project/vllm vllm/worker/cache_engine.py / v1 kv_cache_utils (no memory left for the KV cache)",
       "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
       "initializing the engine.",
       "no_cache_blocks"},
      {"vllm-project/vllm vllm/v1/worker/utils.py request_memory",
       "ValueError: Free memory on device cuda:0 (10.5/79.19 GiB) on startup is less than desired GPU memory "
       "utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
       "startup_free_memory_below_utilization"},
      {"sgl-project/sglang python/sglang/srt/model_executor/model_runner.py init_memory_pool",
       "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
       "no_cache_blocks"},
      {"InternLM/lmdeploy lmdeploy/pytorch/engine/executor/base.py",
       "RuntimeError: No enough gpu memory for runtime. Please try to decrease `max_prefill_token_num` or "
       "`max_batch_size`.",
       "cuda_oom_model_load"},
      {"ROCm/rocBLAS library/src/tensile_host.cpp (no Tensile library for this arch)",
       "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory for "
       "GPU arch : gfx1201\n"
       " List of available TensileLibrary Files : \n"
       "\"/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1100.dat\"",
       "rocm_library_missing_arch"},
      {"ROCm/hipBLASLt library/src/amd_detail/rocblaslt/src/tensile_host.cpp (no hipBLASLt library for this arch)",
       "hipBLASLt error: Cannot read /opt/rocm/lib/hipblaslt/library/TensileLibrary_lazy_gfx1030.dat: No such file or "
       "directory",
       "rocm_library_missing_arch"},
      {"ROCm/clr hipErrorInvalidDeviceFunction via torch (kernels not built for this gfx)",
       "RuntimeError: HIP error: invalid device function\n"
       "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
       "incorrect.\n"
       "For debugging consider passing AMD_SERIALIZE_KERNEL=3",
       "hip_invalid_device_function"},
      {"ollama/ollama discover/amd_linux.go (gfx override advice, a warning on a healthy start)",
       "time=2025-01-01T10:00:00.000Z level=WARN source=amd_linux.go:378 msg=\"amdgpu is not supported (supported "
       "types:[gfx1030 gfx1100 gfx1101 gfx1102 gfx900 gfx906 gfx908 gfx90a gfx940 gfx941 gfx942])\" gpu_type=gfx1031 "
       "gpu=0 library=/usr/lib/ollama\n"
       "time=2025-01-01T10:00:00.000Z level=WARN source=amd_linux.go:385 msg=\"See "
       "https://github.com/ollama/ollama/blob/main/docs/gpu.md#overrides for HSA_OVERRIDE_GFX_VERSION usage\"",
       "unsupported_gpu_arch_runtime"},

      {"nomic-ai/nomic nomic/gpt4all/gpt4all.py _download_executable (no runner built for this OS/CPU)",
       "NotImplementedError: Your platform is not supported: macOS-13.4-x86_64-i386-64bit. Current binaries supported "
       "are x86 Linux and ARM Macs.",
       "wrong_platform_build"},
      {"centre-for-humanities-computing/stormtrooper stormtrooper/trooper.py get_model_type (any OSError of the hub hidden: gated, offline, a typo alike)",
       "ValueError: Model widget-org/Widget-1B cannot be found in HuggingFace repositories, nor could an OpenAI model "
       "be initialized.",
       "unknown"},
      {"openai/harmony (o200k vocabulary fetched at start: download or read, the reason hidden)",
       "openai_harmony.HarmonyError: error downloading or loading vocab file",
       "unknown"},
      {"ggml-org/llama.cpp ggml/src/ggml-cuda/ggml-cuda.cu ggml_cuda_init (driver older than the runtime: no class)",
       "ggml_cuda_init: failed to initialize CUDA: CUDA driver version is insufficient for CUDA runtime version",
       "unknown"},
      {"cudart cudaErrorDevicesUnavailable via torch (exclusive-process mode or a busy device: no class)",
       "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n"
       "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
       "incorrect.",
       "unknown"},
      {"ROCm/clr hipamd/src/hip_code_object.cpp (no code object for this gfx in the fat binary)",
       "\"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\"\n"
       "Aborted (core dumped)",
       "hip_invalid_device_function"},
      {"ROCm/rocBLAS library/src/handle.cpp (hipBLASLt fallback warning on a healthy start)",
       "rocBLAS warning: hipBlasLT failed, falling back to tensile.\n"
       "This message will be only be displayed once, unless the ROCBLAS_VERBOSE_HIPBLASLT_ERROR environment variable "
       "is set.",
       "unknown"},
      {"libdrm amdgpu/amdgpu_asic_id.c (a warning: no amdgpu.ids table)",
       "amdgpu.ids: No such file or directory",
       "unknown"},
      {"NVIDIA/TensorRT-LLM (TensorRT's deserialisation: an engine built on another GPU model)",
       "[TensorRT-LLM][ERROR] 1: [stdArchiveReader.cpp::StdArchiveReaderInitCommon::46] Error Code 1: Serialization "
       "(Serialization assertion stdVersionRead == kSERIALIZATION_VERSION failed.Version tag does not match. Note: "
       "Current Version: 238, Serialized Engine Version: 236)",
       "unknown"},
      {"huggingface/transformers models/auto/auto_factory.py _BaseAutoModelClass.from_config/from_pretrained (a model class not registered for the auto class)",
       "ValueError: Unrecognized configuration class <class "
       "'transformers.models.widget.configuration_widget.WidgetConfig'> for this kind of AutoModel: "
       "AutoModelForCausalLM.\n"
       "Model type should be one of BartConfig, BertConfig, LlamaConfig.",
       "unsupported_model_architecture"},
      {"huggingface/transformers models/llama/configuration_llama.py _rope_scaling_validation (config.json's rope_scaling in a form this transformers does not read: already read)",
       "ValueError: `rope_scaling` must be a dictionary with with two fields, `type` and `factor`, got {'factor': "
       "8.0, 'low_freq_factor': 1.0, 'high_freq_factor': 4.0, 'original_max_position_embeddings': 8192, 'rope_type': "
       "'llama3'}",
       "config_or_tokenizer_error"},
      {"vllm-project/vllm vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory",
       "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is "
       "needed, which is larger than the available KV cache memory (9.21 GiB). Based on the available memory, the "
       "estimated maximum model length is 75424. Try increasing `gpu_memory_utilization` or decreasing "
       "`max_model_len` when initializing the engine.",
       "max_model_len_exceeds_kv_capacity"},
      {"vllm-project/vllm vllm/worker/worker.py raise_if_cache_size_invalid (V0)",
       "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in "
       "KV cache (21088). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
       "engine.",
       "max_model_len_exceeds_kv_capacity"},
      {"vllm-project/vllm vllm/platforms/cuda.py (a warning on a healthy start: FlashAttention-2 unavailable on Turing)",
       "INFO 01-01 10:00:00 [cuda.py:240] Cannot use FlashAttention-2 backend for Volta and Turing GPUs.\n"
       "INFO 01-01 10:00:00 [cuda.py:289] Using XFormers backend.",
       "unknown"},
      {"huggingface/text-generation-inference server/text_generation_server/models/flash_causal_lm.py warmup",
       "RuntimeError: Not enough memory to handle 4096 prefill tokens. You need to decrease "
       "`--max-batch-prefill-tokens`",
       "cuda_oom_model_load"},
      {"ollama/ollama llm/server.go (a model larger than the host's memory: the scheduler refuses)",
       "Error: model requires more system memory (70.5 GiB) than is available (31.2 GiB)",
       "cuda_oom_model_load"},
      {"huggingface/tokenizers (a tokenizer.json path that does not exist: a wrong path or missing file, no class)",
       "Exception: No such file or directory (os error 2)",
       "unknown"},
      {"openai/tiktoken tiktoken/registry.py get_encoding (an encoding name the plugins do not know)",
       "ValueError: Unknown encoding widget_base. Plugins found: ['tiktoken_ext.openai_public']",
       "unknown"},
      {"ROCm/ROCR-Runtime (an HSA memory-aperture fault)",
       "Memory access fault by GPU node-1 (Agent handle: 0x55d0c0c0c0c0) on address 0x7f0000000000. Reason: Page not "
       "present or supervisor privilege.",
       "hip_runtime_error"},
      {"ggml-org/llama.cpp src/llama-kv-cache.cpp (the KV cache of the requested context does not fit)",
       "llama_kv_cache_unified: failed to allocate buffer for kv cache\n"
       "llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache",
       "max_model_len_exceeds_kv_capacity"},
      {"InternLM/lmdeploy src/turbomind/utils/cuda_utils.h check (TurboMind's CUDA allocation)",
       "[TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/allocator.h:231",
       "cuda_oom_model_load"},
      {"sgl-project/sglang python/sglang/srt/model_executor/model_runner.py (memory pool smaller than the context)",
       "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
       "mem_fraction_static=0.88",
       "no_cache_blocks"},
      {"ROCm/rocBLAS library/src/tensile_host.cpp (Tensile host with no device: the stop-42 call)",
       "rocBLAS error: Could not initialize Tensile host: No devices found",
       "unknown"},
      {"ollama/ollama discover/amd_linux.go (the amdgpu driver version file missing: a warning, no class)",
       "time=2025-01-01T10:00:00.000Z level=WARN source=amd_linux.go:61 msg=\"ollama recommends running the "
       "https://www.amd.com/en/support/linux-drivers\" error=\"amdgpu version file missing: /sys/module/amdgpu/version "
       "stat /sys/module/amdgpu/version: no such file or directory\"",
       "unknown"},
      {"pytorch/pytorch torch/cuda/__init__.py _lazy_init (the arch forced by HSA_OVERRIDE_GFX_VERSION has no device: the stop-42 call)",
       "RuntimeError: No HIP GPUs are available",
       "unknown"},
      {"Dao-AILab/flash-attention csrc/flash_attn/flash_api.cpp (a GPU older than Ampere)",
       "RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
       "unsupported_gpu_arch_runtime"},
      {"pytorch/pytorch torch/cuda/__init__.py _lazy_init (DeferredCudaCallError: the driver failed to initialise, several causes)",
       "torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with error: device >= 0 && device "
       "< num_gpus INTERNAL ASSERT FAILED at \"../aten/src/ATen/cuda/CUDAContext.cpp\":50",
       "unknown"},
      {"pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp (NVML_SUCCESS == r: an NVML call failing inside the allocator, several causes)",
       "RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at \"../c10/cuda/CUDACachingAllocator.cpp\":838, please "
       "report a bug to PyTorch.",
       "unknown"},
      {"huggingface/transformers src/transformers/tokenization_utils_fast.py __init__ (no tokenizer.json and no converter: a missing package or missing files alike)",
       "ValueError: Couldn't instantiate the backend tokenizer from one of: \n"
       "(1) a `tokenizers` library serialization file, \n"
       "(2) a slow tokenizer instance to convert or \n"
       "(3) an equivalent slow tokenizer class to instantiate and convert. \n"
       "You need to have sentencepiece installed to convert a slow tokenizer to a fast one.",
       "unknown"},
      {"huggingface/transformers src/transformers/convert_slow_tokenizer.py convert_slow_tokenizer (neither SentencePiece nor tiktoken files: several causes)",
       "ValueError: Converting from SentencePiece and Tiktoken failed, if a converter for SentencePiece is available, "
       "provide a model path with a SentencePiece tokenizer.model file.Currently available slow->fast converters: "
       "['AlbertTokenizer', 'BartTokenizer']",
       "unknown"},
      {"huggingface/transformers src/transformers/models/auto/tokenization_auto.py AutoTokenizer.from_pretrained (tokenizer_config.json names a class this transformers lacks)",
       "ValueError: Tokenizer class WidgetTokenizer does not exist or is not currently imported.",
       "config_or_tokenizer_error"},
      {"python json via transformers configuration_utils (a config.json that is not JSON, the file named)",
       "  File \"/opt/venv/lib/python3.11/site-packages/transformers/configuration_utils.py\", line 712, in "
       "_get_config_dict\n"
       "    config_dict = cls._dict_from_json_file(resolved_config_file)\n"
       "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
       "config_or_tokenizer_error"},
      {"huggingface/safetensors safetensors/src/tensor.rs (MetadataIncompleteBuffer: a truncated download or a damaged file, no class)",
       "safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer",
       "unknown"},
      {"huggingface/safetensors safetensors/src/tensor.rs (HeaderTooLarge: a Git LFS pointer or another format in place of the weights, no class)",
       "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge",
       "unknown"},
      {"huggingface/huggingface_hub utils/_http.py hf_raise_for_status (EntryNotFoundError: a file not in the repo)",
       "huggingface_hub.errors.EntryNotFoundError: 404 Client Error. (Request ID: Root=1-abc)\n"
       "\n"
       "Entry Not Found for url: https://huggingface.co/widget-org/Widget-7B/resolve/main/config.json.",
       "model_path_not_found"},
      {"huggingface/huggingface_hub file_download.py (offline, not in the cache)",
       "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the disk cache and "
       "outgoing traffic has been disabled. To enable hf.co look-ups and downloads online, set 'local_files_only' to "
       "False.",
       "model_path_not_found"},
      {"bitsandbytes-foundation/bitsandbytes bitsandbytes/cextension.py (a warning)",
       "The installed version of bitsandbytes was compiled without GPU support. 8-bit optimizers, 8-bit "
       "multiplication, and GPU quantization are unavailable.",
       "unknown"},
      {"huggingface/transformers tokenization_utils_base.py _from_pretrained",
       "OSError: Unable to load vocabulary from file. Please check that the provided vocabulary is accessible and not "
       "corrupted.",
       "config_or_tokenizer_error"},
      {"google/sentencepiece src/sentencepiece_processor.cc Load (newer wording)",
       "RuntimeError: Internal: could not parse ModelProto from /models/widget-7b/tokenizer.model",
       "config_or_tokenizer_error"},
      {"ROCm/clr hipErrorInvalidDeviceFunction via torch c10/hip (ROCm: an arch the wheel has no kernels for)",
       "RuntimeError: HIP error: invalid device function\n"
       "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions.",
       "hip_invalid_device_function"},
      {"ggml-org/llama.cpp ggml/src/ggml-cuda/ggml-cuda.cu (ggml_cuda_error: no kernel for this arch)",
       "ggml_cuda_compute_forward: MUL_MAT failed\n"
       "CUDA error: no kernel image is available for execution on the device\n"
       "  current device: 0, in function ggml_cuda_compute_forward at ggml/src/ggml-cuda/ggml-cuda.cu:2313",
       "unsupported_gpu_arch_runtime"},
      {"ggml-org/llama.cpp ggml/src/ggml-cuda/ggml-cuda.cu ggml_cuda_error (a ROCm build on an unsupported gfx)",
       "ggml_cuda_compute_forward: RMS_NORM failed\n"
       "ROCm error: invalid device function\n"
       "  current device: 0, in function ggml_cuda_compute_forward at ggml/src/ggml-cuda/ggml-cuda.cu:2313",
       "hip_invalid_device_function"},
      {"ml-explore/mlx-lm mlx_lm/utils.py _get_classes (a model type mlx-lm does not know)",
       "ValueError: Model type widget_moe not supported.",
       "unsupported_model_architecture"},
      {"ollama/ollama discover/amd_linux.go (an integrated Radeon skipped: a warning, the CPU runs the model)",
       "time=2025-01-01T10:00:00.000Z level=INFO source=amd_linux.go:296 msg=\"unsupported Radeon iGPU detected "
       "skipping\" id=0 total=\"512.0 MiB\"",
       "unknown"},
      {"ggml-org/llama.cpp ggml/src/ggml-cuda/ggml-cuda.cu ggml_cuda_init (ROCm sees no device: the stop-42 call)",
       "ggml_cuda_init: failed to initialize ROCm: no ROCm-capable device is detected",
       "unknown"},
      // ------------------------------------------- fifteenth rules round
      {"NVIDIA/nccl src/include/checks.h CUDACHECK (cudaErrorInsufficientDriver under NCCL: a control)",
       "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:121, "
       "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1\n"
       "ncclUnhandledCudaError: Call to CUDA function failed.\n"
       "Last error:\n"
       "Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'",
       "unknown"},
      {"NVIDIA/nccl src/include/checks.h CUDACHECK (another CUDA failure under NCCL stays NCCL's)",
       "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:121, "
       "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1\n"
       "ncclUnhandledCudaError: Call to CUDA function failed.\n"
       "Last error:\n"
       "Cuda failure 'peer access is not supported between these two devices'",
       "nccl_rccl_init_failure"},
      {"ollama/ollama gpu/gpu.go LoadNVCUDAMgmt (the 32-bit libcuda copy skipped: a control)",
       "time=2024-07-01T10:00:00.000Z level=DEBUG source=gpu.go:517 msg=\"Unable to load nvcuda\" "
       "library=/usr/lib/i386-linux-gnu/libcuda.so.550.1.2 error=\"Unable to load "
       "/usr/lib/i386-linux-gnu/libcuda.so.550.1.2 library to query for Nvidia GPUs: "
       "/usr/lib/i386-linux-gnu/libcuda.so.550.1.2: wrong ELF class: ELFCLASS32\"\n"
       "cuInit err: 999\n"
       "time=2024-07-01T10:00:00.010Z level=DEBUG source=gpu.go:517 msg=\"Unable to load nvcuda\" "
       "library=/usr/lib/x86_64-linux-gnu/libcuda.so.550.1.2 error=\"nvcuda init failure: 999\"",
       "unknown"},
      {"python/cpython Lib/ctypes (a library of the other word size outside Ollama's discovery stays read)",
       "OSError: /opt/app/lib/libwidget.so: wrong ELF class: ELFCLASS32",
       "shared_lib_undefined_symbol"},
      {"modelscope/modelscope modelscope/hub/api.py get_model (NotExistError: the id does not resolve)",
       "2025-01-01 10:00:00,000 - modelscope - ERROR - The request model: Widget-7B-Chat does not exist!\n"
       "ERROR 01-01 10:00:00 [config.py:114] Error retrieving file list: The request model: Widget-7B-Chat does "
       "not exist!, retrying 1 of 2",
       "model_path_not_found"},
      {"numpy/numpy numpy/core/_multiarray_umath.py (a NumPy 1.x extension under NumPy 2: a control)",
       "A module that was compiled using NumPy 1.x cannot be run in\n"
       "NumPy 2.0.1 as it may crash. To support both 1.x and 2.x\n"
       "versions of NumPy, modules must be compiled with NumPy 2.0.\n"
       "Traceback (most recent call last):\n"
       "  File \"/x/app.py\", line 1, in <module>\n"
       "    import widget\n"
       "AttributeError: _ARRAY_API not found\n"
       "ImportError: numpy.core.multiarray failed to import",
       "unknown"},
      {"pypa/pip src/pip/_internal/resolution/resolvelib/factory.py (pip 23: a wheel for another platform; a control, never starts)",
       "ERROR: widget-1.0-cp310-cp310-linux_x86_64.whl is not a supported wheel on this platform.",
       "unknown"},
      {"a bare SIGILL from the shell (Jetson / aarch64 or an old CPU alike: a control)",
       "Illegal instruction (core dumped)",
       "unknown"},
      {"vllm-project/vllm vllm/_C (an engine built against another torch: the loader's symbol error)",
       "Traceback (most recent call last):\n"
       "  File \"/x/vllm/__init__.py\", line 3, in <module>\n"
       "    import vllm._C\n"
       "ImportError: /x/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi",
       "shared_lib_undefined_symbol"},
      {"ollama/ollama convert/convert.go ConvertModel (the directory given to ollama create has no config.json)",
       "transferring model data 100%\n"
       "converting model\n"
       "Error: open config.json: file does not exist",
       "model_path_not_found"},
      {"ollama/ollama convert/convert.go ConvertModel (tokenizer larger than the config's vocab_size)",
       "converting model\n"
       "Error: vocabulary is larger than expected '32001' instead of '32000'",
       "config_or_tokenizer_error"},
      {"golang/go io/fs ErrNotExist on another file (a control: not the model's config)",
       "Error: open /etc/widget/settings.yaml: file does not exist",
       "unknown"},
      // Serving frameworks wrapping an engine: the engine's own error decides.
      {"triton-inference-server/core src/model_repository_manager/model_lifecycle.cc (\"failed to load '%s' version %d: %s\", vllm_backend)",
       "I1201 10:00:00.000000 1 model_lifecycle.cc:461] loading: vllm_model:1\n"
       "E1201 10:00:05.000000 1 model_lifecycle.cc:638] failed to load 'vllm_model' version 1: Internal: ValueError: "
       "The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache "
       "(20000). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n"
       "I1201 10:00:05.000000 1 model_lifecycle.cc:773] failed to load 'vllm_model'",
       "max_model_len_exceeds_kv_capacity"},
      {"triton-inference-server/server src/main.cc (the wrapper's own lines with no engine cause: a control)",
       "E1201 10:00:05.000000 1 model_lifecycle.cc:638] failed to load 'vllm_model' version 1: Internal: "
       "AttributeError: 'NoneType' object has no attribute 'widget'\n"
       "error: creating server: Internal - failed to load all models",
       "unknown"},
      {"encode/uvicorn uvicorn/lifespan/on.py (\"Application startup failed. Exiting.\" after torch's OOM, BentoML)",
       "Traceback (most recent call last):\n"
       "  File \"/x/bentoml/_internal/server/base_app.py\", line 1, in startup\n"
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of "
       "23.64 GiB of which 200.00 MiB is free.\n"
       "ERROR:    Application startup failed. Exiting.",
       "cuda_oom_model_load"},
      {"ray-project/ray python/ray/serve (a replica's prefixed vLLM error under Ray Serve LLM)",
       "(ServeReplica:default:LLMServer pid=1) ValueError: No available memory for the cache blocks. Try increasing "
       "`gpu_memory_utilization` when initializing the engine.",
       "no_cache_blocks"},
      // Hygon DCU / DTK and other accelerators.
      {"MooreThreads/torch_musa torch_musa/csrc/core/MUSAException.h C10_MUSA_CHECK (\"MUSA error: %s\": a device error no class covers, a control)",
       "RuntimeError: MUSA error: invalid device ordinal",
       "unknown"},
      {"pypa/pip src/pip/_internal/commands/install.py (pip 23, the 2020 resolver: a dependency conflict warning at install; a control)",
       "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed. "
       "This behaviour is the source of the following dependency conflicts.\n"
       "vllm 0.6.3 requires torch==2.4.0, but you have torch 2.5.1 which is incompatible.",
       "unknown"},
      {"ROCm/rocBLAS library/src/tensile_host.cpp (under a Hygon DTK install path, gfx936)",
       "rocBLAS error: Cannot read /opt/dtk-24.04/lib/rocblas/library/TensileLibrary.dat: No such file or directory "
       "for GPU arch : gfx936\n"
       " List of available TensileLibrary Files : \n"
       "\"/opt/dtk-24.04/lib/rocblas/library/TensileLibrary_lazy_gfx906.dat\"",
       "rocm_library_missing_arch"},
      {"pytorch/pytorch c10/hip (hipified c10/cuda/CUDAException.cpp: a DTK torch on a DCU without its code object)",
       "RuntimeError: HIP error: invalid device function\n"
       "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
       "incorrect.\n"
       "For debugging consider passing AMD_SERIALIZE_KERNEL=3",
       "hip_invalid_device_function"},
      {"pytorch/pytorch torch/csrc/utils/tensor_numpy.cpp (\"Numpy is not available\": a NumPy ABI clash, a control)",
       "Traceback (most recent call last):\n"
       "  File \"/x/engine/worker.py\", line 1, in load\n"
       "    t = torch.from_numpy(a)\n"
       "RuntimeError: Numpy is not available",
       "unknown"},
      {"modelscope/modelscope modelscope/hub/errors.py handle_http_response (a 404 for the model id)",
       "requests.exceptions.HTTPError: 404 Not Found: widget/Widget-7B does not exist or is not accessible, "
       "Request id: 0a1b2c for url: https://www.modelscope.cn/api/v1/models/widget/Widget-7B/revisions",
       "model_path_not_found"},
      {"modelscope/modelscope modelscope/hub/errors.py handle_http_response (a 500 from the hub: a control)",
       "requests.exceptions.HTTPError: 500 Server Error: Internal Server Error, Request id: 0a1b2c, for url: "
       "https://www.modelscope.cn/api/v1/models/widget/Widget-7B/revisions",
       "unknown"},
      // Sixteenth rules round: engines' compiled modules, model stores,
      // another CPU's library, and the file system at start-up.
      {"NVIDIA/TensorRT-LLM tensorrt_llm/engine.py (import tensorrt_llm.bindings, built by scripts/build_wheel.py)",
       "Traceback (most recent call last):\n"
       "  File \"/usr/lib/python3/dist-packages/tensorrt_llm/engine.py\", line 8, in <module>\n"
       "    import tensorrt_llm.bindings as tllm\n"
       "ModuleNotFoundError: No module named 'tensorrt_llm.bindings'",
       "missing_custom_op"},
      {"vllm-project/vllm setup.py (0.1.x: CUDAExtension vllm.activation_ops) and model_executor/layers/activation.py",
       "Traceback (most recent call last):\n"
       "  File \"/srv/vllm/vllm/model_executor/layers/activation.py\", line 5, in <module>\n"
       "    from vllm import activation_ops\n"
       "ImportError: cannot import name 'activation_ops' from 'vllm' (/srv/vllm/vllm/__init__.py)",
       "missing_custom_op"},
      {"vllm-project/vllm setup.py (0.1.x: CUDAExtension vllm.cuda_utils; CPython's partially-initialised import)",
       "ImportError: cannot import name 'cuda_utils' from partially initialized module 'vllm' (most likely due to a "
       "circular import) (/srv/vllm/vllm/__init__.py)",
       "missing_custom_op"},
      {"vllm-project/vllm vllm/__init__.py (a Python name, not a compiled module: a control)",
       "ImportError: cannot import name 'LLM' from 'vllm' (unknown location)", "unknown"},
      {"bentoml/BentoML src/bentoml/_internal/store.py Store.get (typename Model)",
       "Error: [bentoml-cli] `serve` failed: Model 'vllm-llama3-8b:abc123' is not found in BentoML store "
       "/home/u/bentoml/models, you may need to run `bentoml models pull` first",
       "model_path_not_found"},
      {"bentoml/BentoML src/bentoml/_internal/store.py Store.get (typename Bento: the service bundle, a control)",
       "Error: [bentoml-cli] `serve` failed: Bento 'llm-service:latest' is not found in BentoML store "
       "/home/u/bentoml/bentos, you may need to run `bentoml pull` first",
       "unknown"},
      {"Apple dyld Diagnostics::error \"mach-o file, but is an incompatible architecture (have '%s', need '%s')\"",
       "OSError: dlopen(/Users/u/lib/model-metal.so, 0x0006): tried: '/Users/u/lib/model-metal.so' (mach-o file, but "
       "is an incompatible architecture (have 'arm64', need 'x86_64'))",
       "wrong_platform_build"},
      {"Apple dyld (the same, several archs needed: an x86_64 wheel under an arm64 Python)",
       "ImportError: dlopen(/Users/u/venv/lib/python3.12/site-packages/llama_cpp/lib/libllama.dylib, 0x0006): tried: "
       "'/Users/u/venv/lib/python3.12/site-packages/llama_cpp/lib/libllama.dylib' (mach-o file, but is an "
       "incompatible architecture (have 'x86_64', need 'arm64e' or 'arm64'))",
       "wrong_platform_build"},
      {"Apple dyld (newer wording \"has '%s', needs '%s'\")",
       "Exception: dlopen(libggml-metal.dylib, 0x0001): tried: 'libggml-metal.dylib' (mach-o file, but is an "
       "incompatible architecture (has 'arm64', needs 'x86_64'))",
       "wrong_platform_build"},
      {"huggingface/huggingface_hub src/huggingface_hub/file_download.py (ENOSPC while downloading: a control)",
       "Traceback (most recent call last):\n"
       "  File \"/x/huggingface_hub/file_download.py\", line 1, in _download_to_tmp_and_move\n"
       "    http_get(url, f)\n"
       "OSError: [Errno 28] No space left on device",
       "unknown"},
      {"huggingface/huggingface_hub src/huggingface_hub/file_download.py (EACCES on the cache: a control)",
       "Traceback (most recent call last):\n"
       "  File \"/x/huggingface_hub/file_download.py\", line 1, in hf_hub_download\n"
       "    os.makedirs(storage_folder, exist_ok=True)\n"
       "PermissionError: [Errno 13] Permission denied: '/root/.cache/huggingface/hub/models--Qwen--Qwen2.5-7B-Instruct'",
       "unknown"},
      {"CPython OSError EACCES on a model file (the file is there, unreadable: a control)",
       "PermissionError: [Errno 13] Permission denied: '/models/llama/config.json'", "unknown"},
      {"CPython OSError EROFS (a read-only mount under the hub's lock directory: a control)",
       "OSError: [Errno 30] Read-only file system: '/models/.locks'", "unknown"},
      {"pytorch/pytorch torch/csrc/DataLoader.cpp (a too-small /dev/shm in a worker: a control)",
       "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
       "unknown"},
      {"pytorch/pytorch torch/csrc/StorageSharing / libshm (a full /dev/shm: a control)",
       "RuntimeError: unable to write to file </torch_123_456_0>: No space left on device (28)", "unknown"},
      {"NVIDIA/nccl src/misc/shmutils.cc (a too-small /dev/shm under NCCL's shared-memory transport)",
       "node1:123:456 [0] include/shm.h:28 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-AbCdEf "
       "(size 9637888)\n"
       "node1:123:456 [0] NCCL INFO transport/shm.cc:123 -> 2",
       "nccl_rccl_init_failure"},
      {"pytorch/pytorch torch/utils/cpp_extension.py _join_cuda_home (a JIT build without CUDA_HOME: a control)",
       "Traceback (most recent call last):\n"
       "  File \"/x/torch/utils/cpp_extension.py\", line 1, in _join_cuda_home\n"
       "    raise OSError('CUDA_HOME environment variable is not set. '\n"
       "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.",
       "unknown"},
      {"pytorch/pytorch torch/utils/cpp_extension.py verify_ninja_availability (ninja missing at a JIT build: a control)",
       "RuntimeError: Ninja is required to load C++ extensions", "unknown"},
      {"CUDA runtime cudaErrorStreamCaptureUnsupported (during CUDA graph capture: several causes, a control)",
       "RuntimeError: CUDA error: operation not permitted when stream is capturing\n"
       "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
       "incorrect.",
       "unknown"},
      {"vllm-project/vllm vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory (V1 EngineCore)",
       "ValueError: To serve at least one request with the models's max seq len (32768), (4.00 GiB KV cache is "
       "needed, which is larger than the available KV cache memory (2.00 GiB). Based on the available memory, the "
       "estimated maximum model length is 16000. Try increasing `gpu_memory_utilization` or decreasing "
       "`max_model_len` when initializing the engine.",
       "max_model_len_exceeds_kv_capacity"},
      {"vllm-project/vllm vllm/v1/worker/utils.py request_memory (V1 start-up check)",
       "ValueError: Free memory on device (10.5/79.2 GiB) on startup is less than desired GPU memory utilization "
       "(0.9, 71.3 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
       "startup_free_memory_below_utilization"},
      {"ggml-org/llama.cpp src/llama-model.cpp / llama-arch.cpp (b6000+: an architecture this build does not know)",
       "llama_model_load: error loading model: error loading model architecture: unknown model architecture: "
       "'qwen3next'\n"
       "llama_model_load_from_file_impl: failed to load model",
       "unsupported_model_architecture"},
      {"AutoGPTQ/AutoGPTQ auto_gptq/modeling/_base.py from_quantized (no <basename><ext> in the directory or repo)",
       "Traceback (most recent call last):\n"
       "  File \"/x/auto_gptq/modeling/_base.py\", line 1, in from_quantized\n"
       "    raise FileNotFoundError(f\"Could not find model in {model_name_or_path}\")\n"
       "FileNotFoundError: Could not find model in acme/Widget-13B-GPTQ",
       "model_path_not_found"},
      {"mlc-ai/mlc-llm python/mlc_llm/chat_module.py _get_lib_module_path",
       "FileNotFoundError: Cannot find the model library that corresponds to `Widget-7B-q4f16_1`.\n"
       "`Widget-7B-q4f16_1` is either provided in the `chat_config` you passed in, or specified in "
       "dist/Widget-7B-q4f16_1/mlc-chat-config.json.\n"
       "We searched over the following possible paths: \n"
       "- Widget-7B-q4f16_1",
       "model_path_not_found"},
      {"huggingface/huggingface_hub src/huggingface_hub/utils/_http.py OfflineAdapter (a whoami call offline: a control)",
       "huggingface_hub.errors.OfflineModeIsEnabled: Cannot reach https://huggingface.co/api/whoami-v2: offline mode "
       "is enabled. To disable it, please unset the `HF_HUB_OFFLINE` environment variable.",
       "unknown"},
      {"OpenNMT/CTranslate2 src/models/model_reader.cc ModelReader::get_required_file (a wrong path and an "
       "unconverted Transformers directory print it alike; the stop-42 call keeps another format `unknown`: a control)",
       "RuntimeError: Unable to open file 'model.bin' in model '/models/whisper-large-v3'",
       "unknown"},
      {"AutoGPTQ/AutoGPTQ auto_gptq/modeling/_base.py from_quantized (a GGML repository handed to it: another "
       "loader's format, a control)",
       "FileNotFoundError: Could not find model in TheBloke/Widget-7B-GGML",
       "unknown"},
      {"vllm-project/vllm vllm/attention/selector.py (an INFO line: it falls back to another backend; a control)",
       "INFO 05-01 10:00:00 [selector.py:150] Cannot use FlashAttention-2 backend for head size 72.\n"
       "INFO 05-01 10:00:00 [selector.py:160] Using XFormers backend.",
       "unknown"},
      {"pytorch/pytorch torch/cuda/__init__.py _lazy_init (CUDA in a forked child: no class, a control)",
       "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use "
       "the 'spawn' start method",
       "unknown"},
      {"sgl-project/sglang python/sglang/srt/model_executor/model_runner.py init_torch_distributed (TP memory balance)",
       "ValueError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
       "min_per_gpu_memory=10.5, local_gpu_memory=79.1, local_gpu_memory * 0.9=71.2",
       "startup_free_memory_below_utilization"},
      {"ggml-org/llama.cpp src/llama-model-loader.cpp done_getting_tensors (a file from another converter or cut short: several causes, a control)",
       "llama_model_load: error loading model: done_getting_tensors: wrong number of tensors; expected 292, got 291\n"
       "llama_model_load_from_file_impl: failed to load model",
       "unknown"},
      {"vllm-project/vllm vllm/config.py _verify_quantization (a method this release does not know: no class, a control)",
       "ValueError: Unknown quantization method: mxfp4. Must be one of ['awq', 'gptq', 'fp8'].", "unknown"},
      {"vllm-project/vllm vllm/model_executor/model_loader/utils.py (a dtype the quantisation method refuses: an argument, a control)",
       "ValueError: torch.bfloat16 is not supported for quantization method awq. Supported dtypes: [torch.float16]",
       "unknown"},
      {"vllm-project/vllm vllm/config.py _get_and_verify_max_len (a length above the model's own: an argument, a control)",
       "ValueError: User-specified max_model_len (131072) is greater than the derived max_model_len "
       "(max_position_embeddings=32768 or model_max_length=None in model's config.json). To allow overriding this "
       "maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.",
       "unknown"},
      {"vllm-project/vllm vllm/transformers_utils/config.py get_config (custom code without trust_remote_code: a control, as SOURCE.md labels it)",
       "RuntimeError: Failed to load the model config. If the model is a custom model not yet available in the "
       "HuggingFace transformers library, consider setting `trust_remote_code=True` in LLM or using the "
       "`--trust-remote-code` flag in the CLI.",
       "unknown"},
      {"huggingface/transformers src/transformers/dynamic_module_utils.py resolve_trust_remote_code (a control)",
       "ValueError: Loading /models/x requires you to execute the configuration file in that repo on your local "
       "machine. Make sure you have read the code there to avoid malicious use, then set the option "
       "`trust_remote_code=True` to remove this error.",
       "unknown"},
      // JIT builds at start-up: FlashInfer, DeepGEMM, torch's cpp_extension.
      {"flashinfer-ai/flashinfer flashinfer/jit/cpp_ext.py get_cuda_version (a torch without CUDA)",
       "RuntimeError: nvcc not found and PyTorch is not built with CUDA support. Could not determine CUDA version.",
       "wrong_platform_build"},
      {"flashinfer-ai/flashinfer flashinfer/jit/cpp_ext.py get_cuda_path (no CUDA toolkit for the JIT: a control)",
       "RuntimeError: Could not find nvcc and default cuda_home='/usr/local/cuda' doesn't exist", "unknown"},
      {"flashinfer-ai/flashinfer flashinfer/jit/cpp_ext.py run_ninja (nvcc older than the GPU's arch)",
       "RuntimeError: Ninja build failed. Ninja output:\n"
       "[1/3] /usr/local/cuda/bin/nvcc --generate-dependencies-with-compile -c /x/batch_prefill.cu -o "
       "/x/batch_prefill.cuda.o\n"
       "FAILED: /x/batch_prefill.cuda.o\n"
       "nvcc fatal   : Unsupported gpu architecture 'compute_120a'\n"
       "ninja: build stopped: subcommand failed.",
       "unsupported_gpu_arch_runtime"},
      {"deepseek-ai/DeepGEMM csrc/jit/compiler.hpp NVCCCompiler (a toolkit too old for the JIT: a control)",
       "RuntimeError: Assertion error (csrc/jit/compiler.hpp:147): (major > 12 or (major == 12 and minor >= 3)) and "
       "\"NVCC version should be >= 12.3\"",
       "unknown"},
      {"pytorch/pytorch torch/utils/cpp_extension.py _run_ninja_build (a JIT extension build failed: several causes, a control)",
       "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.\n"
       "\n"
       "The above exception was the direct cause of the following exception:\n"
       "\n"
       "RuntimeError: Error building extension 'fused_adam'",
       "unknown"},
      {"MooreThreads/torch_musa torch_musa/csrc/core/MUSACachingAllocator.cpp (MUSAOutOfMemoryError)",
       "torch.OutOfMemoryError: MUSA out of memory. Tried to allocate 896.00 MiB (GPU 0; 47.98 GiB total capacity; "
       "46.90 GiB already allocated; 120.00 MiB free; 47.20 GiB reserved in total by PyTorch)",
       "cuda_oom_model_load"},
      {"Cambricon torch_mlu caching allocator (TORCH_CHECK_WITH(OutOfMemoryError, ..., \"MLU out of memory. Tried to allocate \"))",
       "torch.OutOfMemoryError: MLU out of memory. Tried to allocate 2.00 GiB. MLU 0 has a total capacity of 47.98 GiB "
       "of which 1.20 GiB is free.",
       "cuda_oom_model_load"},
      {"Enflame torch_gcu caching allocator (\"GCU out of memory. Tried to allocate \")",
       "torch.OutOfMemoryError: GCU out of memory. Tried to allocate 2.00 GiB. GCU 0 has a total capacity of 31.98 GiB "
       "of which 1.20 GiB is free.",
       "cuda_oom_model_load"},
      {"Ascend/pytorch (torch_npu) ACL runtime error code (a device error no class covers: a control)",
       "RuntimeError: ACL stream synchronize failed, error code:507035", "unknown"},
      {"pytorch/pytorch torch/serialization.py validate_cuda_device (a CUDA checkpoint on a host without CUDA: a control)",
       "RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If "
       "you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map "
       "your storages to the CPU.",
       "unknown"},
      // A weights file cut short or not a weights file (a partial download, a
      // git-lfs pointer, an HTML page): no class says "damaged file".
      {"ggml-org/llama.cpp src/llama-model-loader.cpp load_all_data (a control)",
       "llama_model_load: error loading model: tensor 'token_embd.weight' data is not within the file bounds, model "
       "is corrupted or incomplete\n"
       "llama_model_load_from_file_impl: failed to load model",
       "unknown"},
      {"huggingface/safetensors bindings/python/src/lib.rs (SafetensorError HeaderTooLarge: a control)",
       "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge", "unknown"},
      {"huggingface/safetensors safetensors/src/tensor.rs (MetadataIncompleteBuffer: a control)",
       "safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer", "unknown"},
      {"ollama/ollama cmd/cmd.go (the client without a server: a control)",
       "Error: could not connect to ollama app, is it running?", "unknown"},
      // The file system at start-up, more: the hub cache and the compile caches.
      {"tox-dev/filelock src/filelock/_error.py Timeout (the hub's download lock held by another process: a control)",
       "filelock._error.Timeout: The file lock '/root/.cache/huggingface/hub/.locks/models--Qwen--Qwen2.5-7B-Instruct/"
       "a1b2c3.lock' could not be acquired.",
       "unknown"},
      {"CPython OSError EDQUOT (a quota on the hub cache: a control)",
       "OSError: [Errno 122] Disk quota exceeded: '/home/u/.cache/huggingface/hub/models--Qwen--Qwen2.5-7B-Instruct/"
       "blobs/a1b2c3.incomplete'",
       "unknown"},
      {"CPython OSError EACCES on a weights shard (the file is there, unreadable: a control)",
       "PermissionError: [Errno 13] Permission denied: '/models/Qwen2.5-7B-Instruct/model-00001-of-00004.safetensors'",
       "unknown"},
      {"CPython OSError EROFS on the hub cache (a read-only mount: a control)",
       "OSError: [Errno 30] Read-only file system: '/root/.cache/huggingface/hub/models--Qwen--Qwen2.5-7B-Instruct'",
       "unknown"},
      {"huggingface/huggingface_hub src/huggingface_hub/utils/_http.py hf_raise_for_status (a 429: rate limited, a control)",
       "huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: "
       "https://huggingface.co/api/models/Qwen/Qwen2.5-7B-Instruct/revision/main",
       "unknown"},
      {"vllm-project/vllm vllm/compilation (ENOSPC writing the torch.compile cache: a control)",
       "OSError: [Errno 28] No space left on device: '/root/.cache/vllm/torch_compile_cache/abc/rank_0_0'",
       "unknown"},
      {"triton-lang/triton python/triton/runtime/cache.py (ENOSPC writing a compiled kernel: a full disk, not a failed compile; a control)",
       "OSError: [Errno 28] No space left on device: '/root/.triton/cache/abc/_fwd_kernel.cubin'",
       "unknown"},
      // CUDA graph capture at start-up (SGLang's cuda_graph_runner.py wraps the error it caught).
      {"sgl-project/sglang python/sglang/srt/model_executor/cuda_graph_runner.py (an OOM while capturing)",
       "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total "
       "capacity of 79.10 GiB of which 512.00 MiB is free.\n"
       "Possible solutions:\n"
       "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
       "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)",
       "cuda_oom_model_load"},
      {"sgl-project/sglang cuda_graph_runner.py over triton's launcher (third_party/nvidia/backend/driver.c): a sticky "
       "illegal address from any earlier kernel, a control",
       "Exception: Capture cuda graph failed: Triton Error [CUDA]: an illegal memory access was encountered\n"
       "Possible solutions:\n"
       "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
       "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)",
       "unknown"},
      {"triton-lang/triton third_party/nvidia/backend/driver.c (a kernel image the device cannot load, kept)",
       "RuntimeError: Triton Error [CUDA]: device kernel image is invalid", "triton_kernel_compile_failure"},
      {"vllm-project/vllm vllm/config.py (max_num_batched_tokens below max_model_len: an argument, a control)",
       "ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (32768). This effectively limits the "
       "maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase "
       "max_num_batched_tokens or decrease max_model_len.",
       "unknown"},
      // ---------------------------------------------- seventeenth rules round
      // The last reading's misses where the log shows the cause (work item b).
      {"triton-lang/triton lib/Analysis/Allocation.cpp getCvtOrder (an assert in triton's MLIR compiler)",
       "python3: /project/lib/Analysis/Allocation.cpp:40: std::pair<llvm::SmallVector<unsigned int>, "
       "llvm::SmallVector<unsigned int> > mlir::triton::getCvtOrder(mlir::Attribute, mlir::Attribute): Assertion "
       "`!(srcMmaLayout && dstMmaLayout) && \"Unexpected mma -> mma layout conversion\"' failed.",
       "triton_kernel_compile_failure"},
      {"triton-lang/triton lib/Conversion/TritonGPUToLLVM (glibc's assert format; the function named for illustration)",
       "python: /source/triton/lib/Conversion/TritonGPUToLLVM/ConvertLayoutOpToLLVM.cpp:112: "
       "mlir::LogicalResult mlir::triton::gpu::ConvertLayoutOpConversion::lowerDistributedToDistributed(): "
       "Assertion `false && \"unsupported layout\"' failed.\n"
       "Aborted (core dumped)",
       "triton_kernel_compile_failure"},
      {"glibc assert() in a C++ program that is not triton (a control)",
       "python: /src/csrc/attention.cpp:88: void launch(int): Assertion `head_dim % 8 == 0' failed.", "unknown"},
      {"google/sentencepiece src/sentencepiece_processor.cc (OUT_OF_RANGE status through the bindings)",
       "RuntimeError: Out of range: piece id is out of range.", "config_or_tokenizer_error"},
      {"google/sentencepiece src/sentencepiece_processor.cc (newer status text)",
       "IndexError: OUT_OF_RANGE: piece id is out of range", "config_or_tokenizer_error"},
      {"NVIDIA/nccl src/misc/shmutils.cc (the last line alone, logged by vLLM's multiproc worker)",
       "(VllmWorkerProcess pid=31) ERROR 01-01 00:00:00 multiproc_worker_utils.py:229] Error while creating shared "
       "memory segment /dev/shm/nccl-Xy12Ab (size 5767520)",
       "nccl_rccl_init_failure"},
      {"NVIDIA/nccl src/misc/shmutils.cc ncclShmOpen (ftruncate/fallocate of the segment)",
       "Error: failed to extend /dev/shm/nccl-Xy12Ab to 9637892 bytes", "nccl_rccl_init_failure"},
      {"CPython multiprocessing.shared_memory under /dev/shm that is not NCCL's (a control)",
       "OSError: [Errno 28] No space left on device: '/dev/shm/psm_1a2b3c'", "unknown"},
      {"sgl-project/sglang python/sglang/srt/multiplex/pdmux_context.py get_arch_constraints",
       "  File \"/x/sglang/srt/multiplex/pdmux_context.py\", line 30, in get_arch_constraints\n"
       "    raise ValueError(f\"Unsupported compute capability: {major}.{minor}\")\n"
       "ValueError: Unsupported compute capability: 12.0",
       "unsupported_gpu_arch_runtime"},
      {"pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp SocketConnectOp (the store's master unreachable)",
       "[W socket.cpp:663] [c10d] The client socket has failed to connect to node0:29500 (errno: 110 - Connection "
       "timed out).\n"
       "RuntimeError: The client socket has failed to connect to any network address of (node0, 29500). The client "
       "socket has failed to connect to node0:29500 (errno: 110 - Connection timed out).",
       "nccl_rccl_init_failure"},
      {"pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp (the connect deadline)",
       "torch.distributed.DistNetworkError: The client socket has timed out after 600s while trying to connect to "
       "(10.0.0.1, 29500).",
       "nccl_rccl_init_failure"},
      {"pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp (the per-address warning alone, while it retries: a "
       "control)",
       "[W socket.cpp:663] [c10d] The client socket has failed to connect to node0:29500 (errno: 111 - Connection "
       "refused).",
       "unknown"},
      {"triton-inference-server/server src/grpc/grpc_server.cc Start (BuildAndStart bound no port)",
       "E1221 09:27:15.346824 166 main.cc:244] failed to start GRPC service: Unavailable - Socket '0.0.0.0:8001' "
       "already in use",
       "port_in_use"},
      {"triton-inference-server/server src/http_server.cc (evhtp_bind_socket failed)",
       "E0101 00:00:00.000000 1 main.cc:245] failed to start HTTP service: Unavailable - Socket '0.0.0.0:8000' "
       "already in use",
       "port_in_use"},
      {"encode/uvicorn uvicorn/server.py startup (EADDRINUSE, the line cut after the errno)",
       "ERROR:    [Errno 98] error while attempting", "port_in_use"},
      {"CPython OSError EADDRINUSE on Linux",
       "OSError: [Errno 98] Address already in use", "port_in_use"},
      // Breadth from the sources (work item c), class by class.
      {"jundot/omlx omlx/exceptions.py ModelTooLargeError (the engine pool's memory cap)",
       "Error: {\"error\":{\"message\":\"Model 'Qwen3-235B-A22B-4bit' (130.08GB) exceeds max-model-memory (64.00GB)\","
       "\"type\":\"server_error\",\"param\":null,\"code\":null}}",
       "cuda_oom_model_load"},
      {"huggingface/hf-hub (Rust) ApiError::RequestError over ureq, as candle prints it",
       "Error: request error: https://huggingface.co/meta-llama/Llama-2-7b-hf/resolve/main/tokenizer.json: status code 401",
       "model_path_not_found"},
      {"huggingface/hf-hub (Rust) a repository id that does not resolve",
       "Error: request error: https://huggingface.co/no-such-org/no-such-model/resolve/main/config.json: status code 404",
       "model_path_not_found"},
      {"huggingface/hf-hub (Rust) rate limited (a control)",
       "Error: request error: https://huggingface.co/Qwen/Qwen2.5-7B-Instruct/resolve/main/config.json: status code 429",
       "unknown"},
      {"huggingface/hf-hub (Rust) a dataset file (a control)",
       "Error: request error: https://huggingface.co/datasets/foo/bar/resolve/main/train.json: status code 404",
       "unknown"},
      {"aphrodite-engine/aphrodite-engine setup.py (the compiled _C extension)",
       "ModuleNotFoundError: No module named 'aphrodite._C'", "missing_custom_op"},
      {"aphrodite-engine/aphrodite-engine (the compiled causal-conv1d extension)",
       "ModuleNotFoundError: No module named 'aphrodite._conv1d_C'", "missing_custom_op"},
      {"aphrodite-engine/aphrodite-engine aphrodite/_custom_ops.py (a Python module, a control)",
       "ModuleNotFoundError: No module named 'aphrodite._custom_ops'", "unknown"},
      {"turboderp-org/exllamav3 exllamav3/ext.py (the compiled extension)",
       "ImportError: No module named 'exllamav3_ext'", "missing_custom_op"},
      {"kvcache-ai/ktransformers ktransformers/operators/experts.py (the CPU MoE extension)",
       "ModuleNotFoundError: No module named 'cpuinfer_ext'", "missing_custom_op"},
      {"InternLM/lmdeploy lmdeploy/turbomind/deploy/target_model/base.py (a bare assert; its source line)",
       "Traceback (most recent call last):\n"
       "  File \"/x/lmdeploy/turbomind/deploy/target_model/base.py\", line 75, in __init__\n"
       "    assert self.model_config.head_num % self.tensor_para_size == 0\n"
       "AssertionError",
       "tp_not_divisible_heads"},
      {"InternLM/lmdeploy lmdeploy/turbomind/deploy/target_model/base.py (the KV heads)",
       "Traceback (most recent call last):\n"
       "  File \"/x/lmdeploy/turbomind/deploy/target_model/base.py\", line 76, in __init__\n"
       "    assert self.model_config.kv_head_num % self.tensor_para_size == 0\n"
       "AssertionError",
       "tp_not_divisible_heads"},
      {"gradio-app/gradio gradio/networking.py start_server (the one port given is taken)",
       "OSError: Cannot find empty port in range: 7860-7860. You can specify a different port by setting the "
       "GRADIO_SERVER_PORT environment variable or passing the `server_port` parameter to `launch()`.",
       "port_in_use"},
      {"pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (no GPU visible: a device the runtime "
       "cannot see, a control)",
       "RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!", "unknown"},
      {"InternLM/lmdeploy lmdeploy/pytorch/models/patch.py _get_model_class (an auto_map class with no rewrite)",
       "RuntimeError: Can not found rewrite for auto_map: FooForCausalLM", "unsupported_model_architecture"},
      {"InternLM/lmdeploy lmdeploy/turbomind/turbomind.py _from_hf (supported_models.py is_supported)",
       "AssertionError: turbomind does not support /models/Foo-7B. Plz try pytorch engine instead.",
       "unsupported_model_architecture"},
      {"InternLM/lmdeploy lmdeploy/archs.py get_model_arch (no architectures, no auto_map)",
       "RuntimeError: Could not find model architecture from config: {'model_type': 'foo', 'hidden_size': 4096}",
       "config_or_tokenizer_error"},
      {"InternLM/lmdeploy lmdeploy/serve/openai/launch_server.py (is_port_available)",
       "ValueError: Port 23333 is not available", "port_in_use"},
      {"InternLM/lmdeploy lmdeploy/pytorch/config.py (fewer KV heads than ranks: the reverse check)",
       "Traceback (most recent call last):\n"
       "  File \"/x/lmdeploy/pytorch/config.py\", line 577, in from_hf_config\n"
       "    assert tp % model_config.num_key_value_heads == 0\n"
       "AssertionError",
       "tp_not_divisible_heads"},
      {"InternLM/lmdeploy src/turbomind/models/llama/unified_attention_layer.cc (TM_CHECK_EQ, core/check.cc's format)",
       "[TM][FATAL] models/llama/unified_attention_layer.cc(210): Check failed: w.head_num % tp_size == 0 (1 vs. 0) 40 3",
       "tp_not_divisible_heads"},
      {"InternLM/lmdeploy src/turbomind/models/llama/GatedDeltaNetLayer.cc (TM_CHECK_EQ)",
       "[TM][FATAL] models/llama/GatedDeltaNetLayer.cc(72): Check failed: first.num_k_heads % tp_size_ == 0 (2 vs. 0)",
       "tp_not_divisible_heads"},
      {"InternLM/lmdeploy src/turbomind/core/check.cc (another TurboMind check: a control)",
       "[TM][FATAL] core/tensor.cc(88): Check failed: dim % vec_size == 0 dim=100 must be divisible by vec_size=8",
       "unknown"},
      {"vllm-project/vllm vllm/platforms/cuda.py get_valid_backends (the field-by-field wording of earlier releases)",
       "ValueError: No valid attention backend found for cuda with head_size: 80, dtype: torch.bfloat16, "
       "kv_cache_dtype: auto, block_size: 16, use_mla: False, has_sink: False, use_sparse: False. Reasons: "
       "{FLASH_ATTN: [head_size not supported], FLASHINFER: [head_size not supported], TRITON_ATTN: [head_size not "
       "supported]}",
       "unsupported_head_size"},
      {"vllm-project/vllm vllm/platforms/cuda.py (a dtype no backend takes: a control)",
       "ValueError: No valid attention backend found for cuda with head_size: 128, dtype: torch.float32, "
       "kv_cache_dtype: auto, block_size: 16, use_mla: False, has_sink: False, use_sparse: False. Reasons: "
       "{FLASH_ATTN: [dtype not supported]}",
       "unknown"},
      {"huggingface/text-generation-inference server/text_generation_server/models/__init__.py (the flash models did "
       "not import; the warning before it says why: a control)",
       "NotImplementedError: Sharded Gemma requires Flash Attention enabled models.", "unknown"},
      {"huggingface/text-generation-inference server/text_generation_server/layers/attention/__init__.py (SYSTEM is "
       "cpu for a CPU torch and for a CUDA torch that sees no GPU alike: a control)",
       "ImportError: System cpu doesn't support flash/paged attention", "unknown"},
      {"EricLBuehler/mistral.rs mistralrs-core/src/paged_attention/mod.rs calculate_cache_config",
       "Error: Num GPU blocks is 0. This means there is not enough memory. Either reduce the memory "
       "amount/utilization/context size or disable PagedAttention.",
       "no_cache_blocks"},
      {"EricLBuehler/mistral.rs mistralrs-core/src/pipeline/loaders/normal_loaders.rs (auto-detected class)",
       "Error: Unsupported Hugging Face Transformers -CausalLM model class `FooForCausalLM`. Please raise an issue.",
       "unsupported_model_architecture"},
      {"EricLBuehler/mistral.rs mistralrs-core/src/gguf/mod.rs GGUFArchitecture::from_value",
       "Error: Unknown GGUF architecture `qwen35moe`", "unsupported_model_architecture"},
      {"EricLBuehler/mistral.rs (the --arch flag's parse: a bad flag, a control)",
       "error: invalid value 'llama5' for '--arch <ARCH>': Unknown architecture `llama5`. Possible architectures: "
       "`mistral`, `gemma`, `mixtral`, `llama`.",
       "unknown"},
      {"ollama/ollama llm/server.go Load (no layout fitted even after the back-off)",
       "Error: 500 Internal Server Error: memory layout cannot be allocated", "cuda_oom_model_load"},
      {"ollama/ollama llm/server.go Load (num_gpu fixed by the user)",
       "Error: 500 Internal Server Error: memory layout cannot be allocated with num_gpu = 48", "cuda_oom_model_load"},
      {"ollama/ollama llm/llama_server.go (the llama-server runner)",
       "time=2026-01-01T00:00:00.000Z level=ERROR source=server.go:1 msg=\"error loading llama server\" "
       "error=\"llama-server reported out-of-memory during startup: cudaMalloc failed\"",
       "cuda_oom_model_load"},
      {"huggingface/text-generation-inference router/src/infer/chat_template.rs ChatTemplate::new (minijinja's Debug form)",
       "thread 'main' panicked at router/src/infer/chat_template.rs:63:14:\n"
       "called `Result::unwrap()` on an `Err` value: Error { kind: SyntaxError, detail: \"unexpected `.`, expected "
       "assignment operator\", name: \"<string>\", line: 7 }",
       "config_or_tokenizer_error"},
      {"pallets/jinja jinja2/exceptions.py TemplateSyntaxError (a --chat-template given on the command line or the "
       "tokenizer's: the line does not say which; a control)",
       "jinja2.exceptions.TemplateSyntaxError: unexpected '}'", "unknown"},
      {"vllm-project/vllm-omni (model-type resolution of its entrypoints)",
       "ValueError: Failed to read config.json for model: /models/Fun-CosyVoice3-0.5B. Error: config.json found but "
       "missing 'model_type' for model: /models/Fun-CosyVoice3-0.5B",
       "config_or_tokenizer_error"},
      {"sgl-project/sglang python/sglang/srt/model_executor/model_runner.py (a card below sm75)",
       "RuntimeError: SGLang only supports sm75 and above.", "unsupported_gpu_arch_runtime"},
      {"pytorch/pytorch aten/src/ATen/native/transformers/cuda/sdp_utils.cpp (a debug warning while SDPA picks a "
       "kernel; it falls back: a control)",
       "UserWarning: Flash attention only supports sm75 and sm8x gpu architectures. Attempting to run on a sm 7.0 gpu.",
       "unknown"},
      {"vllm-project/vllm vllm/executor/ray_utils.py (Ray's placement group smaller than the world: a control)",
       "ValueError: The number of required GPUs exceeds the total number of available GPUs in the placement group.",
       "unknown"},
      {"ModelTC/lightllm lightllm/models/llama/model.py _verify_params",
       "Traceback (most recent call last):\n"
       "  File \"/x/lightllm/models/llama/model.py\", line 40, in _verify_params\n"
       "    assert self.config[\"num_attention_heads\"] % self.world_size_ == 0\n"
       "AssertionError",
       "tp_not_divisible_heads"},
      {"huggingface/text-generation-inference server/text_generation_server/layers/attention/cuda.py (its kernels' import guard)",
       "ImportError: Could not import attention kernels. Make sure your installation is correct. Complete error: No "
       "module named 'attention_kernels'",
       "missing_custom_op"},
      {"huggingface/text-generation-inference server/text_generation_server/layers/attention/rocm.py (a card that is "
       "not an MI210/MI250)",
       "ImportError: AMD GPU AMD Radeon RX 6800 does not support flash-attention", "unsupported_gpu_arch_runtime"},
      {"huggingface/text-generation-inference server/text_generation_server/layers/attention/rocm.py (by capability)",
       "ImportError: AMD GPU with ROCm capability 10 3 is not supported", "unsupported_gpu_arch_runtime"},
      {"sgl-project/sglang python/sglang/srt/layers/attention/attention_registry.py (FA3 outside SM 80-90)",
       "AssertionError: FlashAttention v3 Backend requires SM>=80 and SM<=90. Please use `--attention-backend "
       "flashinfer`.",
       "unsupported_gpu_arch_runtime"},
      // ------------------------------------------- eighteenth rules round
      {"huggingface/transformers src/transformers/configuration_utils.py _get_config_dict (a .gguf handed to a loader "
       "that reads a config.json directory: another loader's format, a control)",
       "OSError: It looks like the config file at '/models/widget-1.1b-chat.Q4_0.gguf' is not a valid JSON file.",
       "unknown"},
      {"huggingface/transformers src/transformers/configuration_utils.py _get_config_dict (a safetensors file as the "
       "config: a control)",
       "OSError: It looks like the config file at '/models/widget/model.safetensors' is not a valid JSON file.",
       "unknown"},
      {"huggingface/transformers src/transformers/modeling_utils.py (a folder named for its bit width: another "
       "loader's format, a control)",
       "OSError: Error no file named pytorch_model.bin, tf_model.h5, model.ckpt.index or flax_model.msgpack found in "
       "directory /srv/widget/Widget-13b-Chat-4bit.",
       "unknown"},
      {"huggingface/transformers src/transformers/modeling_utils.py (Qwen's Int4 naming: a control)",
       "OSError: acme/Widget-7B-Chat-Int4 does not appear to have a file named pytorch_model.bin, tf_model.h5, "
       "model.ckpt or flax_model.msgpack.",
       "unknown"},
      {"huggingface/transformers src/transformers/modeling_utils.py (a plain folder, still read)",
       "OSError: Error no file named pytorch_model.bin, tf_model.h5, model.ckpt.index or flax_model.msgpack found in "
       "directory /srv/widget/Widget-13b-Chat.",
       "model_path_not_found"},
      {"oobabooga/text-generation-webui server.py model menu + modules/GPTQ_loader.py (an unquantised model chosen "
       "from a menu that also lists a GPTQ one: a control)",
       "The following models are available:\n\n1. acme_widget-6.7b\n2. widget-13b-GPTQ-4bit-128g\n\n"
       "Which one do you want to load? 1-2\n\n1\n\nLoading acme_widget-6.7b...\n"
       "Could not find the quantized model in .pt or .safetensors format, exiting...",
       "unknown"},
      {"oobabooga/text-generation-webui server.py model menu + modules/GPTQ_loader.py (a GPTQ model chosen, still read)",
       "The following models are available:\n\n1. acme_widget-6.7b\n2. widget-13b-GPTQ-4bit-128g\n\n"
       "Which one do you want to load? 1-2\n\n2\n\nLoading widget-13b-GPTQ-4bit-128g...\n"
       "Could not find the quantized model in .pt or .safetensors format, exiting...",
       "model_path_not_found"},
      {"1038lab/ComfyUI-QwenVL AILab_QwenVL.py load_model",
       "ERROR: FP8 models require a GPU with Compute Capability 8.9 or higher (e.g., RTX 4090). Your GPU's capability "
       "is 7.5. Please select a non-FP8 model.",
       "unsupported_gpu_arch_runtime"},
      {"triton-lang/triton lib/Analysis/Allocation.cpp getCvtOrder (glibc's assert line cut before 'Assertion', after a "
       "progress bar)",
       "Warming up autotune cache ...\n"
       "  0%|          | 0/12 [00:00<?, ?it/s]python3: /project/lib/Analysis/Allocation.cpp:42: "
       "std::pair<llvm::SmallVector<unsigned int>, llvm::SmallVector<unsigned int> > "
       "mlir::triton::getCvtOrder(const mlir::Attribute&, const mlir::\nAborted",
       "triton_kernel_compile_failure"},
      {"glibc assert/assert.c (another C++ assert cut the same way, outside triton: a control)",
       "python3: /src/csrc/widget.cpp:42: void widget::Launch(const widget::Config&, int): \nAborted",
       "unknown"},
      {"pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupGloo.cpp (ProcessGroupGloo constructor)",
       "[rank3]:[E130 18:11:34.707542570 ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed with "
       "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n"
       "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
       "nccl_rccl_init_failure"},
      {"pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupGloo.cpp (the hostname warning before it connects: a "
       "control)",
       "[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a (local) address. Using the loopback "
       "address as fallback. Manually set the network interface to bind to with GLOO_SOCKET_IFNAME. (function "
       "operator())",
       "unknown"},
      {"pytorch/pytorch torch/csrc/distributed/c10d/TCPStore.cpp TCPStore::waitForWorkers",
       "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 1/8 clients joined.",
       "nccl_rccl_init_failure"},
      {"pytorch/pytorch torch/csrc/distributed/c10d/TCPStore.cpp (after a rank's own error: that error is the cause)",
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB "
       "of which 1.00 GiB is free.\n"
       "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 7/8 clients joined.",
       "cuda_oom_model_load"},
      {"vllm-project/vllm vllm/model_executor/layers/quantization/fp8.py Fp8MoEMethod.create_weights (TP 8)",
       "INFO 09-01 02:20:44 [config.py:1] Initializing a V1 LLM engine with config: model='/models/widget-fp8', "
       "tensor_parallel_size=8, pipeline_parallel_size=1\n"
       "ValueError: The output_size of gate's and up's weight = 192 is not divisible by weight quantization block_n = "
       "128.",
       "tp_not_divisible_heads"},
      {"vllm-project/vllm vllm/model_executor/layers/quantization/utils/fp8_utils.py validate_fp8_block_shape (TP 4)",
       "INFO 09-01 02:20:44 [config.py:1] Initializing a V1 LLM engine with config: model='/models/widget-fp8', "
       "tensor_parallel_size=4, pipeline_parallel_size=1\n"
       "ValueError: Weight output_partition_size = 576 is not divisible by weight quantization block_n = 128.",
       "tp_not_divisible_heads"},
      {"vllm-project/vllm vllm/model_executor/layers/quantization/utils/fp8_utils.py (TP 1: the checkpoint's own "
       "shape, no TP change helps; a control)",
       "INFO 09-01 02:20:44 [config.py:1] Initializing a V1 LLM engine with config: model='/models/widget-fp8', "
       "tensor_parallel_size=1, pipeline_parallel_size=1\n"
       "ValueError: Weight output_partition_size = 576 is not divisible by weight quantization block_n = 128.",
       "unknown"},
      {"OpenNMT/CTranslate2 include/ctranslate2/cuda/utils.h CUDA_CHECK",
       "RuntimeError: CUDA failed with error out of memory", "cuda_oom_model_load"},
      {"OpenNMT/CTranslate2 include/ctranslate2/cuda/utils.h CUDA_CHECK (another runtime error: a control)",
       "RuntimeError: CUDA failed with error invalid device ordinal", "unknown"},
      {"ggml-org/llama.cpp common/common.cpp common_download_file (-hf of a repo or file that is not there)",
       "common_download_file: trying to download model from https://huggingface.co/acme/widget-GGUF/resolve/main/"
       "widget-q4_k_m.gguf to /root/.cache/llama.cpp/acme_widget-GGUF_widget-q4_k_m.gguf (server_etag:, "
       "server_last_modified:)...\n"
       "common_download_file: invalid http status code received: 404",
       "model_path_not_found"},
      {"ggml-org/llama.cpp common/common.cpp common_download_file (the HEAD probe: it downloads anyway; a control)",
       "common_download_file: HEAD invalid http status code received: 404", "unknown"},
      {"ggml-org/llama.cpp common/common.cpp common_download_file (a 503 of the hub: a control)",
       "common_download_file: invalid http status code received: 503", "unknown"},
      {"ggml-org/llama.cpp convert_hf_to_gguf.py ModelBase.from_model_architecture",
       "NotImplementedError: Architecture 'WidgetNextForCausalLM' not supported!", "unsupported_model_architecture"},
      {"Dao-AILab/flash-attention csrc/flash_attn/fmha_api.cpp (1.x) mha_fwd",
       "RuntimeError: Expected is_sm90 || is_sm8x || is_sm75 to be true, but got false.  (Could this error message be "
       "improved?  If so, please report an enhancement request to PyTorch.)",
       "unsupported_gpu_arch_runtime"},
      {"Dao-AILab/flash-attention csrc/flash_attn/fmha_api.cpp (1.x; a dtype check of the same form: a control)",
       "RuntimeError: Expected q_dtype == torch::kFloat16 to be true, but got false.", "unknown"},
      {"bitsandbytes-foundation/bitsandbytes csrc/ops.cu igemmlt (0.37-0.41, the NO_CUBLASLT build below sm75)",
       "=============================================\n"
       "ERROR: Your GPU does not support Int8 Matmul!\n"
       "=============================================\n"
       "python: /x/bitsandbytes/csrc/ops.cu:408: int igemmlt(cublasLtHandle_t, int, int, int, const int8_t*, const "
       "int8_t*, void*, float*, int, int, int) [with int FORMATB = 3; int DTYPE_OUT = 32; int SCALE_ROWS = 0]: "
       "Assertion `false' failed.\nAborted (core dumped)",
       "unsupported_gpu_arch_runtime"},
      // ------------------------------------------- nineteenth rules round
      {"mudler/LocalAI pkg/model/initializers.go (\"could not load model: %w\") over ggml-org/whisper.cpp "
       "bindings/go/pkg/whisper/model.go New (os.Stat of the model file)",
       "5:38AM INF Loading model 'widget-q4.gguf' with backend whisper\n"
       "5:38AM INF [whisper] Fails: could not load model: rpc error: code = Unknown desc = stat "
       "/build/models/widget-q4.gguf: no such file or directory",
       "model_path_not_found"},
      {"mudler/LocalAI pkg/model/initializers.go (a backend process that died: a control)",
       "5:38AM INF [rwkv] Fails: could not load model: rpc error: code = Unavailable desc = error reading from "
       "server: EOF",
       "unknown"},
      {"Go os.Stat outside a backend's LoadModel (a file that is not the model: a control)",
       "Error: stat /etc/widget/config.yaml: no such file or directory", "unknown"},
      {"huggingface/transformers src/transformers/utils/hub.py cached_file (RevisionNotFoundError)",
       "OSError: v2.1 is not a valid git identifier (branch name, tag name or commit id) that exists for this model "
       "name. Check the model page at 'https://huggingface.co/acme/widget' for available revisions.",
       "model_path_not_found"},
      {"xorbitsai/xoscar xoscar/backends/message.pyx _AsCauseBase.__str__ over huggingface/tokenizers' parse error "
       "(Xinference's REST API log)",
       "2025-05-15 21:49:23,593 xinference.api.restful_api 1 ERROR    [address=0.0.0.0:39281, pid=2511] expected "
       "value at line 1 column 1",
       "config_or_tokenizer_error"},
      {"xorbitsai/xoscar xoscar/backends/message.pyx (another relayed error: a control)",
       "2025-05-15 21:49:23,593 xinference.api.restful_api 1 ERROR    [address=0.0.0.0:39281, pid=2511] Model not "
       "found in the model list, uid: widget",
       "unknown"},
      {"mlc-ai/tokenizers-cpp rust/src/lib.rs TokenizerWrapper::from_str (Tokenizer::from_str(json).unwrap())",
       "thread '<unnamed>' panicked at 'called `Result::unwrap()` on an `Err` value: Error(\"expected value\", line: "
       "1, column: 1)', src/lib.rs:21:50\n"
       "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
       "config_or_tokenizer_error"},
      {"mlc-ai/tokenizers-cpp rust/src/lib.rs (Rust 1.73+ panic layout)",
       "thread '<unnamed>' panicked at src/lib.rs:27:50:\n"
       "called `Result::unwrap()` on an `Err` value: Error(\"EOF while parsing a string\", line: 1, column: 4096)",
       "config_or_tokenizer_error"},
      {"Rust std Result::unwrap on an io::Error (not serde_json's parse error: a control)",
       "thread '<unnamed>' panicked at 'called `Result::unwrap()` on an `Err` value: Os { code: 2, kind: NotFound, "
       "message: \"No such file or directory\" }', src/lib.rs:21:50",
       "unknown"},
      {"mlc-ai/mlc-llm cpp/llm_chat.cc LLMChat::LoadJSONOverride (ICHECK of an mlc-chat-config.json field)",
       "org.apache.tvm.Base$TVMError: InternalError: Check failed: (config[\"conv_template\"].is<std::string>()) is "
       "false: \nStack trace:\n  File \"/x/mlc-llm/cpp/llm_chat.cc\", line 540",
       "config_or_tokenizer_error"},
      {"mlc-ai/mlc-llm cpp/llm_chat.cc LLMChat::LoadJSONOverride (CHECK(partial_update) << \"Key ... not found.\")",
       "tvm.error.InternalError: Traceback (most recent call last):\n"
       "InternalError: Check failed: (partial_update) is false: Key \"shift_fill_factor\" not found.",
       "config_or_tokenizer_error"},
      {"mlc-ai/mlc-llm cpp/llm_chat.cc (the model library's metadata, not the chat config: a control)",
       "org.apache.tvm.Base$TVMError: InternalError: Check failed: (metadata[\"model_name\"].is<std::string>()) is "
       "false: ",
       "unknown"},
      {"triton-lang/triton third_party/nvidia/backend/compiler.py make_llir (triton 3.x; pm.run raises map::at)",
       "  File \"/x/triton/compiler/compiler.py\", line 282, in compile\n"
       "    next_module = compile_ir(module, metadata)\n"
       "  File \"/x/triton/backends/nvidia/compiler.py\", line 216, in make_llir\n"
       "    pm.run(mod)\n"
       "IndexError: map::at",
       "triton_kernel_compile_failure"},
      {"pybind11's std::out_of_range from another C++ extension (no triton stage: a control)",
       "  File \"/x/site-packages/torch/_ops.py\", line 755, in __call__\n"
       "    return self._op(*args, **kwargs)\n"
       "IndexError: map::at",
       "unknown"},
      {"ggml-org/llama.cpp ggml/src/ggml-sycl/ggml-sycl.cpp ggml_backend_sycl_buffer_type_alloc_buffer",
       "ggml_backend_sycl_buffer_type_alloc_buffer: can't allocate 8589934592 Bytes of memory on device\n"
       "llama_model_load: error loading model: unable to allocate SYCL0 buffer",
       "cuda_oom_model_load"},
      {"ggml-org/llama.cpp ggml/src/ggml-sycl/ggml-sycl.cpp ggml_sycl_pool_leg::alloc",
       "ggml_sycl_pool_leg::alloc: can't allocate 1073741824 Bytes of memory on device/GPU", "cuda_oom_model_load"},
      {"apple-oss-distributions/dyld dyld/Loader.cpp (flat-namespace bind)",
       "ImportError: dlopen(/x/site-packages/widget/_C.abi3.so, 0x0002): symbol not found in flat namespace "
       "'__ZN3c1017RegisterOperatorsD1Ev'",
       "shared_lib_undefined_symbol"},
  };
  return kTemplates;
}

TEST(SourceTemplatesTest, ShippedRulesNameTheClassOfEachSourceTemplate) {
  auto rules = LoadDiagnosisRulesFile(
      testing::SourceDir() + "/" + std::string(kDefaultDiagnosisRulesPath), AllDiagnosisActions());
  ASSERT_TRUE(rules.ok()) << rules.status();
  auto classifier = LogClassifier::Create(*rules, "rules.txtpb");
  ASSERT_TRUE(classifier.ok()) << classifier.status();
  for (const Template& t : Templates()) {
    dcufleet::v1::DiagnosisResult result = classifier->ClassifyText(t.log);
    std::string top = result.findings_size() > 0 ? result.findings(0).failure_class() : "unknown";
    std::string rule = result.findings_size() > 0 ? result.findings(0).rule_id() : "";
    EXPECT_EQ(top, t.want) << t.source << " (rule " << rule << ")\n" << t.log;
  }
}

}  // namespace
}  // namespace dcu::modelkit
