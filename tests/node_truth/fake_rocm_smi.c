/* A stand-in librocm_smi64 built by the tests. Two devices with known
 * figures; device 1 returns UINT64_MAX as its target graphics version (what
 * DTK's SMI produced as "gfx18446744073709551615"). Built twice: with
 * rsmi_init (like /opt/dtk/.hyhal/rocm_smi/lib) and, with
 * -DFAKE_RSMI_NO_INIT, without it (like the /opt/hyhal/lib copy of seed 003).
 * Signatures follow ROCm/rocm_smi_lib include/rocm_smi/rocm_smi.h. */
#include <stdint.h>

#define GIB (1024ull * 1024ull * 1024ull)

static int initialized;

#ifndef FAKE_RSMI_NO_INIT
int rsmi_init(uint64_t flags) {
  (void)flags;
  initialized = 1;
  return 0;
}
#endif

int rsmi_shut_down(void) {
  initialized = 0;
  return 0;
}

int rsmi_num_monitor_devices(uint32_t* n) {
  if (!initialized) return 8; /* RSMI_STATUS_INIT_ERROR */
  *n = 2;
  return 0;
}

/* Buses of the first two devices of tests/fixtures/sysfs/k100ai-8x. */
int rsmi_dev_pci_id_get(uint32_t d, uint64_t* bdfid) {
  if (d > 1) return 1;
  *bdfid = (uint64_t)(d == 0 ? 0x07 : 0x0a) << 8;
  return 0;
}
int rsmi_dev_vendor_id_get(uint32_t d, uint16_t* id) {
  if (d > 1) return 1;
  *id = 0x1d94;
  return 0;
}
int rsmi_dev_id_get(uint32_t d, uint16_t* id) {
  if (d > 1) return 1;
  *id = 0x6210;
  return 0;
}
int rsmi_dev_unique_id_get(uint32_t d, uint64_t* id) {
  if (d > 1) return 1;
  *id = 0x7100fa8866904061ull + d * 4097ull;
  return 0;
}
int rsmi_dev_target_graphics_version_get(uint32_t d, uint64_t* v) {
  if (d > 1) return 1;
  *v = d == 0 ? 928ull : UINT64_MAX;
  return 0;
}
/* RSMI_MEM_TYPE_VRAM = 0. */
int rsmi_dev_memory_total_get(uint32_t d, int type, uint64_t* total) {
  if (d > 1 || type != 0) return 2;
  *total = 65520ull * 1024 * 1024;
  return 0;
}
int rsmi_dev_memory_usage_get(uint32_t d, int type, uint64_t* used) {
  if (d > 1 || type != 0) return 2;
  *used = d == 0 ? 3 * GIB : 1 * GIB;
  return 0;
}
