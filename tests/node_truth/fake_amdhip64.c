/* A stand-in libamdhip64 built by the tests, for dcu-memprobe.
 * Devices come from $FAKE_HIP_DEVICES: "bus,free,total,arch;..." e.g.
 *   "0000:07:00.0,5153960755,68702699520,gfx928:sramecc-:xnack-"
 * (default: one device). Built twice: normal, and with -DFAKE_HIP_HANG where
 * hipMemGetInfo never returns from device $FAKE_HIP_HANG_AT (default 1) on (the hung runtime of seed
 * 003). Signatures follow HIP's hip_runtime_api.h (hipError_t is an int). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
  *free_b = (size_t)devs[current].free_b;
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
