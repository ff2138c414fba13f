/* libcuda.so.1: the CUDA driver API calls the suite's memory probe makes (gb10check/canary/memory.py, through ctypes),
 * answered as a GB10's driver answers them. Built at a node's boot into its multiarch library folder, where the
 * real driver installs it; a container sees it through the node's /usr (the sim's image binds it). The device is there
 * only where the NVIDIA hook gave the container the GPU (/etc/gb10sim, as the real toolkit mounts the driver).
 *
 * Figures: total is MemTotal (a GB10's CUDA total is its unified memory: 121.69 GiB = MemTotal 127600816 kB), free is
 * MemFree: on unified memory CUDA counts the page cache the kernel could reclaim as used (vllm-project/vllm PR 35356).
 * The node's GB10-sized meminfo: /etc/gb10sim/meminfo (the state syncer's copy, which a container given the GPU sees;
 * its own /proc is the machine's), else /proc/meminfo. Capability 12.1, integrated (CU_DEVICE_ATTRIBUTE_INTEGRATED). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;

enum { OK = 0, INVALID_VALUE = 1, NOT_INITIALIZED = 3, NO_DEVICE = 100, INVALID_DEVICE = 101 };
static const char *STATE = "/etc/gb10sim/state.json";
static int initialised = 0;
static int context = 1;

static unsigned long long meminfo_bytes(const char *key) {
    char line[256];
    unsigned long long kb = 0;
    size_t n = strlen(key);
    FILE *f = fopen("/etc/gb10sim/meminfo", "r");
    if (!f) f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0 && line[n] == ':' && sscanf(line + n + 1, "%llu", &kb) == 1) break;
    fclose(f);
    return kb * 1024ULL;
}

CUresult cuInit(unsigned int flags) {
    (void)flags;
    if (access(STATE, R_OK) != 0) return NO_DEVICE;
    initialised = 1;
    return OK;
}

CUresult cuDriverGetVersion(int *version) {
    if (!version) return INVALID_VALUE;
    *version = 13000;
    return OK;
}

CUresult cuDeviceGetCount(int *count) {
    if (!initialised) return NOT_INITIALIZED;
    *count = 1;
    return OK;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    if (!initialised) return NOT_INITIALIZED;
    if (ordinal != 0) return INVALID_DEVICE;
    *device = 0;
    return OK;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice device) {
    char text[8192], *at, *end;
    size_t n = 0;
    FILE *f;
    if (!initialised) return NOT_INITIALIZED;
    if (device != 0) return INVALID_DEVICE;
    snprintf(name, len, "NVIDIA GB10");
    if ((f = fopen(STATE, "r"))) {  /* the scenario's gpu_name, as nvidia-smi's stand-in prints it */
        n = fread(text, 1, sizeof text - 1, f);
        fclose(f);
    }
    text[n] = 0;
    if ((at = strstr(text, "\"gpu_name\"")) && (at = strchr(at + 10, '"')) && (end = strchr(at + 1, '"')) && end - at - 1 < len) {
        memcpy(name, at + 1, end - at - 1);
        name[end - at - 1] = 0;
    }
    return OK;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device) {
    if (!initialised) return NOT_INITIALIZED;
    if (device != 0) return INVALID_DEVICE;
    *value = attribute == 75 ? 12 : attribute == 76 ? 1 : attribute == 18 ? 1 : 0;  /* major, minor, integrated */
    return OK;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device) {
    if (!initialised) return NOT_INITIALIZED;
    if (device != 0) return INVALID_DEVICE;
    *bytes = (size_t)meminfo_bytes("MemTotal");
    return OK;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice device) {
    if (!initialised) return NOT_INITIALIZED;
    if (device != 0) return INVALID_DEVICE;
    *ctx = &context;
    return OK;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) { return device == 0 ? OK : INVALID_DEVICE; }
CUresult cuDevicePrimaryCtxRelease(CUdevice device) { return cuDevicePrimaryCtxRelease_v2(device); }
CUresult cuCtxSetCurrent(CUcontext ctx) { return ctx == &context || ctx == NULL ? OK : INVALID_VALUE; }

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
    if (!initialised) return NOT_INITIALIZED;
    *free_bytes = (size_t)meminfo_bytes("MemFree");
    *total_bytes = (size_t)meminfo_bytes("MemTotal");
    return OK;
}
