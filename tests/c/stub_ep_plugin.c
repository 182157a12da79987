/* A stand-in plugin EP library (ORT's EP ABI) for tests/c/test_ep_plugins.c.
 *
 * The real plugins pair only with their vendor's hardware (OpenVINO's with
 * Intel devices: vendor id 0x8086), so on other hosts they offer no EP
 * device and the plugin path of the chains could not be exercised. This one
 * offers every CPU device ORT found, under the EP name given by the
 * registration name's prefix up to '@' ("OpenVINOExecutionProvider@a" ->
 * "OpenVINOExecutionProvider"). It claims no node, so ORT's CPU EP runs the
 * whole graph and results are the CPU EP's. A registration name containing
 * "failcreate" makes CreateEp fail: the case of an EP that appends and then
 * cannot create the session. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <onnxruntime_c_api.h>

/* The EP ABI this stub implements: every member up to 1.23 is filled in. */
#define STUB_API 23

typedef struct StubFactory {
    OrtEpFactory base;
    const OrtApi *api;
    char name[128];
    bool fail_create;
} StubFactory;

typedef struct StubEp {
    OrtEp base;
    char name[128];
} StubEp;

static const char *ORT_API_CALL ep_name(const OrtEp *ep)
{
    return ((const StubEp *)ep)->name;
}

static OrtStatus *ORT_API_CALL ep_capability(OrtEp *ep, const OrtGraph *graph,
                                             OrtEpGraphSupportInfo *info)
{
    (void)ep, (void)graph, (void)info;
    return NULL; /* no node: ORT's CPU EP runs the graph */
}

static const char *ORT_API_CALL factory_name(const OrtEpFactory *f)
{
    return ((const StubFactory *)f)->name;
}

static const char *ORT_API_CALL factory_vendor(const OrtEpFactory *f)
{
    (void)f;
    return "vmafdnn-tests";
}

static uint32_t ORT_API_CALL factory_vendor_id(const OrtEpFactory *f)
{
    (void)f;
    return 0;
}

static const char *ORT_API_CALL factory_version(const OrtEpFactory *f)
{
    (void)f;
    return "0.0.1";
}

static OrtStatus *ORT_API_CALL supported_devices(OrtEpFactory *f,
                                                 const OrtHardwareDevice *const *devices,
                                                 size_t n, OrtEpDevice **out, size_t max,
                                                 size_t *n_out)
{
    StubFactory *sf = (StubFactory *)f;
    *n_out = 0;
    for (size_t i = 0; i < n && *n_out < max; i++) {
        if (sf->api->HardwareDevice_Type(devices[i]) != OrtHardwareDeviceType_CPU)
            continue;
        OrtStatus *st = sf->api->GetEpApi()->CreateEpDevice(f, devices[i], NULL, NULL,
                                                            &out[*n_out]);
        if (st)
            return st;
        (*n_out)++;
    }
    return NULL;
}

static OrtStatus *ORT_API_CALL create_ep(OrtEpFactory *f, const OrtHardwareDevice *const *devices,
                                         const OrtKeyValuePairs *const *metadata, size_t n,
                                         const OrtSessionOptions *options,
                                         const OrtLogger *logger, OrtEp **out)
{
    (void)devices, (void)metadata, (void)n, (void)options, (void)logger;
    StubFactory *sf = (StubFactory *)f;
    if (sf->fail_create)
        return sf->api->CreateStatus(ORT_FAIL, "stub EP: no such device here");
    StubEp *ep = calloc(1, sizeof(*ep));
    if (!ep)
        return sf->api->CreateStatus(ORT_FAIL, "stub EP: out of memory");
    ep->base.ort_version_supported = STUB_API;
    ep->base.GetName = ep_name;
    ep->base.GetCapability = ep_capability;
    memcpy(ep->name, sf->name, sizeof(ep->name));
    *out = &ep->base;
    return NULL;
}

static void ORT_API_CALL release_ep(OrtEpFactory *f, OrtEp *ep)
{
    (void)f;
    free(ep);
}

static OrtStatus *ORT_API_CALL create_data_transfer(OrtEpFactory *f, OrtDataTransferImpl **out)
{
    (void)f;
    *out = NULL; /* CPU memory only: nothing to transfer */
    return NULL;
}

static bool ORT_API_CALL stream_aware(const OrtEpFactory *f)
{
    (void)f;
    return false;
}

OrtStatus *CreateEpFactories(const char *registration_name, const OrtApiBase *base,
                             const OrtLogger *logger, OrtEpFactory **factories, size_t max,
                             size_t *n);
OrtStatus *ReleaseEpFactory(OrtEpFactory *factory);

OrtStatus *CreateEpFactories(const char *registration_name, const OrtApiBase *base,
                             const OrtLogger *logger, OrtEpFactory **factories, size_t max,
                             size_t *n)
{
    (void)logger;
    const OrtApi *api = base->GetApi(STUB_API);
    if (!api)
        return NULL;
    if (max < 1)
        return api->CreateStatus(ORT_INVALID_ARGUMENT, "stub EP: no room for a factory");
    StubFactory *f = calloc(1, sizeof(*f));
    if (!f)
        return api->CreateStatus(ORT_FAIL, "stub EP: out of memory");
    f->api = api;
    size_t len = strcspn(registration_name, "@");
    if (len >= sizeof(f->name))
        len = sizeof(f->name) - 1;
    memcpy(f->name, registration_name, len);
    f->fail_create = strstr(registration_name, "failcreate") != NULL;
    f->base.ort_version_supported = STUB_API;
    f->base.GetName = factory_name;
    f->base.GetVendor = factory_vendor;
    f->base.GetSupportedDevices = supported_devices;
    f->base.CreateEp = create_ep;
    f->base.ReleaseEp = release_ep;
    f->base.GetVendorId = factory_vendor_id;
    f->base.GetVersion = factory_version;
    f->base.CreateDataTransfer = create_data_transfer;
    f->base.IsStreamAware = stream_aware;
    factories[0] = &f->base;
    *n = 1;
    return NULL;
}

OrtStatus *ReleaseEpFactory(OrtEpFactory *factory)
{
    free(factory);
    return NULL;
}
