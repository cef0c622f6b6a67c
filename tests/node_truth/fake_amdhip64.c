/* A stand-in libamdhip64 built by the tests, for dcu-memprobe.
 * Devices come from $FAKE_HIP_DEVICES: "bus,free,total,arch;..." e.g.
 *   "0000:07:00.0,5153960755,68702699520,gfx928:sramecc-:xnack-"
 * (default: one device). Built twice: normal, and with -DFAKE_HIP_HANG where
 * hipMemGetInfo never returns from device $FAKE_HIP_HANG_AT (default 1) on (the hung runtime of seed
 * 003). Signatures follow HIP's hip_runtime_api.h (hipError_t is an int).
 *
 * With $FAKE_HIP_KFD_ROOT (a fixture root), a device's free memory is also
 * lowered by what simulated engines hold on it: the vram_<gpu_id> files of
 * KFD process records marked `.fake-engine` under
 * <root>/sys/class/kfd/kfd/proc (fake_vllm writes them while it runs, as the
 * kernel keeps them for a real process). Device K is the K-th GPU node of
 * the root's KFD topology, HIP's enumeration order. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#define MAX_DEV 16

struct dev {
  char bus[32];
  unsigned long long free_b, total_b;
  char arch[64];
};

static struct dev devs[MAX_DEV];
static int ndev = -1;
static int current;

static void load(void) {
  if (ndev >= 0) return;
  ndev = 0;
  const char* spec = getenv("FAKE_HIP_DEVICES");
  if (!spec) spec = "0000:07:00.0,60000000000,68702699520,gfx928:sramecc-:xnack-";
  char buf[4096];
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
    if ((f = strtok_r(NULL, ",", &s2))) snprintf(d->arch, sizeof(d->arch), "%s", f);
    ++ndev;
  }
}

static unsigned long long read_ull(const char* path, int* ok) {
  FILE* f = fopen(path, "r");
  unsigned long long v = 0;
  *ok = 0;
  if (!f) return 0;
  if (fscanf(f, "%llu", &v) == 1) *ok = 1;
  fclose(f);
  return v;
}

static int cmp_int(const void* a, const void* b) {
  int x = *(const int*)a, y = *(const int*)b;
  return (x > y) - (x < y);
}

/* The gpu_id of the index-th GPU node (simd_count > 0) of the KFD topology. */
static int gpu_id_of(const char* root, int index, char* out, size_t len) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/sys/class/kfd/kfd/topology/nodes", root);
  DIR* d = opendir(path);
  if (!d) return 0;
  int nodes[256], n = 0;
  struct dirent* e;
  while ((e = readdir(d)) && n < 256) {
    char* end = NULL;
    long v = strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0') nodes[n++] = (int)v;
  }
  closedir(d);
  qsort(nodes, (size_t)n, sizeof(int), cmp_int);
  int gpu = 0;
  for (int i = 0; i < n; ++i) {
    snprintf(path, sizeof(path), "%s/sys/class/kfd/kfd/topology/nodes/%d/properties", root, nodes[i]);
    FILE* f = fopen(path, "r");
    if (!f) continue;
    char key[128];
    unsigned long long val;
    int simds = 0;
    while (fscanf(f, "%127s %llu", key, &val) == 2) {
      if (strcmp(key, "simd_count") == 0) simds = val > 0;
    }
    fclose(f);
    if (!simds) continue;
    if (gpu++ != index) continue;
    snprintf(path, sizeof(path), "%s/sys/class/kfd/kfd/topology/nodes/%d/gpu_id", root, nodes[i]);
    int ok;
    unsigned long long id = read_ull(path, &ok);
    if (!ok) return 0;
    snprintf(out, len, "%llu", id);
    return 1;
  }
  return 0;
}

/* Bytes simulated engines hold on device `index` (see the top). */
static unsigned long long engines_hold(int index) {
  const char* root = getenv("FAKE_HIP_KFD_ROOT");
  char gpu_id[32];
  if (!root || !*root || !gpu_id_of(root, index, gpu_id, sizeof(gpu_id))) return 0;
  char path[4096];
  snprintf(path, sizeof(path), "%s/sys/class/kfd/kfd/proc", root);
  DIR* d = opendir(path);
  if (!d) return 0;
  unsigned long long held = 0;
  struct dirent* e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char mark[4096];
    snprintf(mark, sizeof(mark), "%s/%s/.fake-engine", path, e->d_name);
    if (access(mark, F_OK) != 0) continue;
    char vram[4096];
    snprintf(vram, sizeof(vram), "%s/%s/vram_%s", path, e->d_name, gpu_id);
    int ok;
    unsigned long long v = read_ull(vram, &ok);
    if (ok) held += v;
  }
  closedir(d);
  return held;
}

int hipGetDeviceCount(int* count) {
  load();
  *count = ndev;
  return 0;
}

int hipSetDevice(int d) {
  load();
  if (d < 0 || d >= ndev) return 101; /* hipErrorInvalidDevice */
  current = d;
  return 0;
}

int hipMemGetInfo(size_t* free_b, size_t* total_b) {
  load();
#ifdef FAKE_HIP_HANG
  /* Hangs from device $FAKE_HIP_HANG_AT on (default 1). */
  const char* at = getenv("FAKE_HIP_HANG_AT");
  if (current >= (at ? atoi(at) : 1)) {
    for (;;) pause();
  }
#endif
  unsigned long long held = engines_hold(current);
  *free_b = (size_t)(devs[current].free_b > held ? devs[current].free_b - held : 0);
  *total_b = (size_t)devs[current].total_b;
  return 0;
}

int hipDeviceGetPCIBusId(char* buf, int len, int d) {
  load();
  if (d < 0 || d >= ndev) return 101;
  snprintf(buf, (size_t)len, "%s", devs[d].bus);
  return 0;
}

int hipDeviceGetName(char* buf, int len, int d) {
  load();
  if (d < 0 || d >= ndev) return 101;
  snprintf(buf, (size_t)len, "%s", "K100_AI");
  return 0;
}

/* name[256] first, gcnArchName much later, as in hipDeviceProp_t. */
int hipGetDevicePropertiesR0600(void* prop, int d) {
  load();
  if (d < 0 || d >= ndev) return 101;
  char* p = (char*)prop;
  memset(p, 0, 1600);
  snprintf(p, 256, "%s", "K100_AI");
  snprintf(p + 1160, 256, "%s", devs[d].arch);
  return 0;
}
