/* A stand-in libnvidia-ml.so.1 built by the tests. Signatures and struct
 * layouts follow nvml.h (NVML API 11/12); values come from the environment:
 *   FAKE_NVML_DEVICES  "busId,total,reserved,used,minor,cc,uuid,name;..."
 *                      e.g. "00000000:19:00.0,150754820096,553648128,0,0,90,GPU-1f0e...,NVIDIA H200"
 *                      (cc = major*10+minor; default: one H200-like device)
 *   FAKE_NVML_PROCS    "dev:pid:bytes;..." pid "self" = the calling process,
 *                      bytes "na" = NVML_VALUE_NOT_AVAILABLE
 *   FAKE_NVML_INIT_RC  nvmlInit's return code (e.g. 9 = DRIVER_NOT_LOADED)
 *   FAKE_GPU_PROCS_FILE  optional "dev:pid:bytes" lines appended by running
 *                      processes (the drill's CPU dry run): like a driver,
 *                      the fake lists only those still alive and counts
 *                      their bytes as used; a process that exits gives its
 *                      memory back (with FAKE_GPU_LIST_ZOMBIES set, only
 *                      once its zombie is collected: a driver that releases late)
 * Built twice: normal (the _v2/_v3 calls) and with -DFAKE_NVML_V1_ONLY
 * (only nvmlInit, nvmlDeviceGetMemoryInfo and the v1 process call with the
 * 16-byte nvmlProcessInfo_v1_t, as old drivers have). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEV 16
#define MAX_PROC 64
#define NOT_AVAILABLE 0xffffffffffffffffull

typedef struct {
  char bus[32];
  unsigned long long total, reserved, used;
  unsigned int minor;
  int cc;
  char uuid[96];
  char name[96];
} dev_t_;

typedef struct {
  int dev;
  unsigned int pid;
  unsigned long long bytes;
} proc_t_;

static dev_t_ devs[MAX_DEV];
static int ndev = -1;
static proc_t_ procs[MAX_PROC];
static int nproc;

static void load_file(void);

static void load(void) {
  if (ndev >= 0) return;
  ndev = 0;
  const char* spec = getenv("FAKE_NVML_DEVICES");
  if (!spec) spec = "00000000:19:00.0,150754820096,553648128,0,0,90,GPU-00000000-0000-0000-0000-000000000000,NVIDIA H200";
  char buf[8192];
  snprintf(buf, sizeof(buf), "%s", spec);
  char* save = NULL;
  for (char* item = strtok_r(buf, ";", &save); item && ndev < MAX_DEV; item = strtok_r(NULL, ";", &save)) {
    dev_t_* d = &devs[ndev];
    memset(d, 0, sizeof(*d));
    char* s2 = NULL;
    char* f = strtok_r(item, ",", &s2);
    if (!f) continue;
    snprintf(d->bus, sizeof(d->bus), "%s", f);
    if ((f = strtok_r(NULL, ",", &s2))) d->total = strtoull(f, NULL, 10);
    if ((f = strtok_r(NULL, ",", &s2))) d->reserved = strtoull(f, NULL, 10);
    if ((f = strtok_r(NULL, ",", &s2))) d->used = strtoull(f, NULL, 10);
    if ((f = strtok_r(NULL, ",", &s2))) d->minor = (unsigned)atoi(f);
    if ((f = strtok_r(NULL, ",", &s2))) d->cc = atoi(f);
    if ((f = strtok_r(NULL, ",", &s2))) snprintf(d->uuid, sizeof(d->uuid), "%s", f);
    if ((f = strtok_r(NULL, ",", &s2))) snprintf(d->name, sizeof(d->name), "%s", f);
    ++ndev;
  }
  nproc = 0;
  load_file();
  const char* ps = getenv("FAKE_NVML_PROCS");
  if (!ps) return;
  snprintf(buf, sizeof(buf), "%s", ps);
  save = NULL;
  for (char* item = strtok_r(buf, ";", &save); item && nproc < MAX_PROC; item = strtok_r(NULL, ";", &save)) {
    char* s2 = NULL;
    char* a = strtok_r(item, ":", &s2);
    char* b = strtok_r(NULL, ":", &s2);
    char* c = strtok_r(NULL, ":", &s2);
    if (!a || !b || !c) continue;
    procs[nproc].dev = atoi(a);
    procs[nproc].pid = strcmp(b, "self") == 0 ? (unsigned)getpid() : (unsigned)strtoul(b, NULL, 10);
    procs[nproc].bytes = strcmp(c, "na") == 0 ? NOT_AVAILABLE : strtoull(c, NULL, 10);
    ++nproc;
  }
}

/* Alive as the driver sees it: in /proc and not a zombie. */
static int alive(unsigned int pid) {
  char path[64], buf[512];
  snprintf(path, sizeof(path), "/proc/%u/stat", pid);
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  char* close = strrchr(buf, ')');
  if (!close || close[1] != ' ') return 0;
  /* FAKE_GPU_LIST_ZOMBIES: like a driver that has not torn the context of
   * an ended process down yet. */
  if (getenv("FAKE_GPU_LIST_ZOMBIES")) return close[2] != 'X';
  return close[2] != 'Z' && close[2] != 'X';
}

static void load_file(void) {
  const char* path = getenv("FAKE_GPU_PROCS_FILE");
  if (!path) return;
  FILE* f = fopen(path, "r");
  if (!f) return;
  char line[256];
  while (fgets(line, sizeof(line), f) && nproc < MAX_PROC) {
    int dev = 0;
    unsigned int pid = 0;
    unsigned long long bytes = 0;
    if (sscanf(line, "%d:%u:%llu", &dev, &pid, &bytes) != 3 || !alive(pid)) continue;
    if (dev < 0 || dev >= ndev) continue;
    procs[nproc].dev = dev;
    procs[nproc].pid = pid;
    procs[nproc].bytes = bytes;
    devs[dev].used += bytes;
    ++nproc;
  }
  fclose(f);
}

static int dev_index(void* h) {
  dev_t_* d = (dev_t_*)h;
  if (d < devs || d >= devs + ndev) return -1;
  return (int)(d - devs);
}

/* "00000000:19:00.0" and "0000:19:00.0" name the same device. */
static int same_bus(const char* a, const char* b) {
  unsigned da, ba, xa, db, bb, xb;
  if (sscanf(a, "%x:%x:%x", &da, &ba, &xa) != 3 || sscanf(b, "%x:%x:%x", &db, &bb, &xb) != 3) return 0;
  return da == db && ba == bb && xa == xb;
}

int nvmlInit_v2(void) {
  const char* rc = getenv("FAKE_NVML_INIT_RC");
  ndev = -1; /* each init reads the environment again (tests change it) */
  load();
  return rc ? atoi(rc) : 0;
}
int nvmlInit(void) { return nvmlInit_v2(); }
int nvmlShutdown(void) { return 0; }
const char* nvmlErrorString(int rc) {
  switch (rc) {
    case 0: return "Success";
    case 9: return "Driver Not Loaded";
    case 7: return "Insufficient Size";
    default: return "Unknown Error";
  }
}

#ifndef FAKE_NVML_V1_ONLY
int nvmlDeviceGetCount_v2(unsigned int* n) {
  ndev = -1; /* a new pass: the processes (and their memory) are read again, as a driver's are live */
  load();
  *n = (unsigned)ndev;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void** h) {
  load();
  if ((int)i >= ndev) return 2;
  *h = &devs[i];
  return 0;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char* bus, void** h) {
  load();
  for (int i = 0; i < ndev; ++i) {
    if (same_bus(bus, devs[i].bus)) {
      *h = &devs[i];
      return 0;
    }
  }
  return 6; /* NVML_ERROR_NOT_FOUND */
}
#else
int nvmlDeviceGetCount(unsigned int* n) {
  load();
  *n = (unsigned)ndev;
  return 0;
}
int nvmlDeviceGetHandleByIndex(unsigned int i, void** h) {
  load();
  if ((int)i >= ndev) return 2;
  *h = &devs[i];
  return 0;
}
#endif

int nvmlDeviceGetName(void* h, char* buf, unsigned int len) {
  int i = dev_index(h);
  if (i < 0) return 2;
  snprintf(buf, len, "%s", devs[i].name);
  return 0;
}
int nvmlDeviceGetUUID(void* h, char* buf, unsigned int len) {
  int i = dev_index(h);
  if (i < 0) return 2;
  snprintf(buf, len, "%s", devs[i].uuid);
  return 0;
}

typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} pci_info_t;

#ifndef FAKE_NVML_V1_ONLY
int nvmlDeviceGetPciInfo_v3(void* h, pci_info_t* p) {
  int i = dev_index(h);
  if (i < 0) return 2;
  memset(p, 0, sizeof(*p));
  snprintf(p->busId, sizeof(p->busId), "%s", devs[i].bus);
  sscanf(devs[i].bus, "%x:%x:%x", &p->domain, &p->bus, &p->device);
  p->pciDeviceId = (0x2335u << 16) | 0x10deu; /* H200 SXM, as lspci shows it */
  return 0;
}
int nvmlDeviceGetCudaComputeCapability(void* h, int* major, int* minor) {
  int i = dev_index(h);
  if (i < 0) return 2;
  *major = devs[i].cc / 10;
  *minor = devs[i].cc % 10;
  return 0;
}
int nvmlDeviceGetMinorNumber(void* h, unsigned int* m) {
  int i = dev_index(h);
  if (i < 0) return 2;
  *m = devs[i].minor;
  return 0;
}
int nvmlSystemGetDriverVersion(char* buf, unsigned int len) {
  snprintf(buf, len, "%s", "580.159.04");
  return 0;
}

typedef struct {
  unsigned int version;
  unsigned long long total, reserved, free, used;
} mem_v2_t;

int nvmlDeviceGetMemoryInfo_v2(void* h, mem_v2_t* m) {
  int i = dev_index(h);
  if (i < 0) return 2;
  if (m->version != ((unsigned)sizeof(mem_v2_t) | (2u << 24))) return 25; /* ARGUMENT_VERSION_MISMATCH */
  m->total = devs[i].total;
  m->reserved = devs[i].reserved;
  m->used = devs[i].used;
  m->free = devs[i].total - devs[i].reserved - devs[i].used;
  return 0;
}
#endif

typedef struct {
  unsigned long long total, free, used;
} mem_v1_t;

int nvmlDeviceGetMemoryInfo(void* h, mem_v1_t* m) {
  int i = dev_index(h);
  if (i < 0) return 2;
  m->total = devs[i].total;
  m->used = devs[i].used + devs[i].reserved; /* v1 "used" includes the reserved memory */
  m->free = devs[i].total - m->used;
  return 0;
}

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} proc_v2_t;
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} proc_v1_t;

static int count_for(int i) {
  int n = 0;
  for (int k = 0; k < nproc; ++k) n += procs[k].dev == i;
  return n;
}

#ifndef FAKE_NVML_V1_ONLY
int nvmlDeviceGetComputeRunningProcesses_v3(void* h, unsigned int* count, proc_v2_t* out) {
  int i = dev_index(h);
  if (i < 0) return 2;
  int n = count_for(i);
  if ((int)*count < n || (!out && n > 0)) {
    *count = (unsigned)n;
    return 7; /* INSUFFICIENT_SIZE */
  }
  int j = 0;
  for (int k = 0; k < nproc; ++k) {
    if (procs[k].dev != i) continue;
    out[j].pid = procs[k].pid;
    out[j].usedGpuMemory = procs[k].bytes;
    out[j].gpuInstanceId = 0xffffffffu;
    out[j].computeInstanceId = 0xffffffffu;
    ++j;
  }
  *count = (unsigned)n;
  return 0;
}
int nvmlDeviceGetGraphicsRunningProcesses_v3(void* h, unsigned int* count, proc_v2_t* out) {
  (void)out;
  if (dev_index(h) < 0) return 2;
  *count = 0;
  return 0;
}
#else
int nvmlDeviceGetComputeRunningProcesses(void* h, unsigned int* count, proc_v1_t* out) {
  int i = dev_index(h);
  if (i < 0) return 2;
  int n = count_for(i);
  if ((int)*count < n || (!out && n > 0)) {
    *count = (unsigned)n;
    return 7;
  }
  int j = 0;
  for (int k = 0; k < nproc; ++k) {
    if (procs[k].dev != i) continue;
    out[j].pid = procs[k].pid;
    out[j].usedGpuMemory = procs[k].bytes;
    ++j;
  }
  *count = (unsigned)n;
  return 0;
}
#endif
