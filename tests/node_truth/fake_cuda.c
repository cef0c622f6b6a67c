/* A stand-in libcuda.so.1 built by the tests, for dcu-memprobe --runtime
 * cuda. Signatures follow cuda.h (CUresult is an int, CUdevice an int,
 * CUcontext a pointer). Devices come from $FAKE_CUDA_DEVICES:
 *   "busId,free,total,cc,uuidhex;..." e.g.
 *   "0000:19:00.0,149600000000,150110011392,90,1f0e2d3c4b5a69788796a5b4c3d2e1f0"
 * (cc = major*10+minor; default: one H200-like device). cuMemGetInfo fails
 * with CUDA_ERROR_INVALID_CONTEXT (201) unless a context is current, as the
 * real one does. With FAKE_GPU_PROCS_FILE (see fake_nvml.c), free shrinks
 * by the bytes of the processes listed there that are still alive. Built twice: normal, and with -DFAKE_CUDA_HANG where cuInit
 * never returns (a wedged driver). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEV 16

struct dev {
  char bus[32];
  unsigned long long free_b, total_b;
  int cc;
  unsigned char uuid[16];
};

static struct dev devs[MAX_DEV];
static int ndev = -1;
static int initialized;
static int ctx_tokens[MAX_DEV];
static int* current;

static void load(void) {
  if (ndev >= 0) return;
  ndev = 0;
  const char* spec = getenv("FAKE_CUDA_DEVICES");
  if (!spec) spec = "0000:19:00.0,149600000000,150110011392,90,1f0e2d3c4b5a69788796a5b4c3d2e1f0";
  char buf[8192];
  snprintf(buf, sizeof(buf), "%s", spec);
  char* save = NULL;
  for (char* item = strtok_r(buf, ";", &save); item && ndev < MAX_DEV; item = strtok_r(NULL, ";", &save)) {
    struct dev* d = &devs[ndev];
    memset(d, 0, sizeof(*d));
    char* s2 = NULL;
    char* f = strtok_r(item, ",", &s2);
    if (!f) continue;
    snprintf(d->bus, sizeof(d->bus), "%s", f);
    if ((f = strtok_r(NULL, ",", &s2))) d->free_b = strtoull(f, NULL, 10);
    if ((f = strtok_r(NULL, ",", &s2))) d->total_b = strtoull(f, NULL, 10);
    if ((f = strtok_r(NULL, ",", &s2))) d->cc = atoi(f);
    if ((f = strtok_r(NULL, ",", &s2))) {
      for (int k = 0; k < 16 && f[2 * k] && f[2 * k + 1]; ++k) {
        unsigned v = 0;
        sscanf(f + 2 * k, "%2x", &v);
        d->uuid[k] = (unsigned char)v;
      }
    }
    ++ndev;
  }
}

int cuInit(unsigned int flags) {
  (void)flags;
#ifdef FAKE_CUDA_HANG
  for (;;) pause();
#endif
  load();
  initialized = 1;
  return 0;
}
int cuDriverGetVersion(int* v) {
  *v = 13000;
  return 0;
}
int cuDeviceGetCount(int* n) {
  if (!initialized) return 3; /* CUDA_ERROR_NOT_INITIALIZED */
  *n = ndev;
  return 0;
}
int cuDeviceGet(int* d, int ordinal) {
  if (!initialized) return 3;
  if (ordinal < 0 || ordinal >= ndev) return 101; /* CUDA_ERROR_INVALID_DEVICE */
  *d = ordinal;
  return 0;
}
int cuDeviceGetName(char* buf, int len, int d) {
  if (d < 0 || d >= ndev) return 101;
  snprintf(buf, (size_t)len, "%s", "NVIDIA H200");
  return 0;
}
int cuDeviceGetPCIBusId(char* buf, int len, int d) {
  if (d < 0 || d >= ndev) return 101;
  snprintf(buf, (size_t)len, "%s", devs[d].bus);
  return 0;
}
int cuDeviceGetUuid_v2(unsigned char* uuid, int d) {
  if (d < 0 || d >= ndev) return 101;
  memcpy(uuid, devs[d].uuid, 16);
  return 0;
}
int cuDeviceGetAttribute(int* v, int attr, int d) {
  if (d < 0 || d >= ndev) return 101;
  if (attr == 75) *v = devs[d].cc / 10;
  else if (attr == 76) *v = devs[d].cc % 10;
  else return 1; /* CUDA_ERROR_INVALID_VALUE */
  return 0;
}
int cuDevicePrimaryCtxRetain(void** ctx, int d) {
  if (d < 0 || d >= ndev) return 101;
  *ctx = &ctx_tokens[d];
  return 0;
}
int cuDevicePrimaryCtxRelease_v2(int d) {
  if (d < 0 || d >= ndev) return 101;
  if (current == &ctx_tokens[d]) current = NULL;
  return 0;
}
int cuCtxSetCurrent(void* ctx) {
  current = (int*)ctx;
  return 0;
}
static unsigned long long held_on(int dev) {
  const char* path = getenv("FAKE_GPU_PROCS_FILE");
  if (!path) return 0;
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  unsigned long long sum = 0;
  char line[256];
  while (fgets(line, sizeof(line), f)) {
    int d = 0;
    unsigned int pid = 0;
    unsigned long long bytes = 0;
    if (sscanf(line, "%d:%u:%llu", &d, &pid, &bytes) != 3 || d != dev) continue;
    char p[64], buf[512];
    snprintf(p, sizeof(p), "/proc/%u/stat", pid);
    FILE* s = fopen(p, "r");
    if (!s) continue;
    size_t n = fread(buf, 1, sizeof(buf) - 1, s);
    fclose(s);
    buf[n] = 0;
    char* close = strrchr(buf, ')');
    if (close && close[1] == ' ' && close[2] != 'X' && (getenv("FAKE_GPU_LIST_ZOMBIES") || close[2] != 'Z')) sum += bytes;
  }
  fclose(f);
  return sum;
}

int cuMemGetInfo_v2(size_t* free_b, size_t* total_b) {
  if (!current) return 201; /* CUDA_ERROR_INVALID_CONTEXT */
  int d = (int)(current - ctx_tokens);
  *free_b = (size_t)(devs[d].free_b - held_on(d));
  *total_b = (size_t)devs[d].total_b;
  return 0;
}
int cuGetErrorName(int rc, const char** s) {
  switch (rc) {
    case 0: *s = "CUDA_SUCCESS"; break;
    case 201: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
    default: *s = "CUDA_ERROR_UNKNOWN"; break;
  }
  return 0;
}
