/* The roof table (common/roof.h): a GPU by its deviceProperties name, the
 * gpu_roof setting's forms and its refusals, a precision's peak. */
#include <string.h>

#include "common/config.h"
#include "common/roof.h"
#include "tests/check.h"

static void roof_of_device_names(void)
{
  static const char *const names[][2] = {
    { "AMD Instinct MI300X", "MI300X" },
    { "AMD Instinct MI300X VF", "MI300X" },
    { "AMD Instinct MI325X", "MI325X" },
    { "AMD Instinct MI355X", "MI355X" },
    { "NVIDIA H100 80GB HBM3", "H100 SXM" },
    { "NVIDIA H200", "H200" },
    { "NVIDIA B200", "B200" },
    { "NVIDIA A100-SXM4-80GB", "A100 SXM" },
  };
  struct tr_roof r;

  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    CHECK_INT(tr_roof_of_device(names[i][0], &r), 1);
    CHECK_STR(r.name, names[i][1]);
    CHECK(r.source != NULL && r.tb_s > 1);
  }
  /* A card of another memory and clock is not the SXM part. */
  CHECK_INT(tr_roof_of_device("NVIDIA H100 PCIe", &r), 0);
  CHECK_INT(tr_roof_of_device("NVIDIA A100-PCIE-40GB", &r), 0);
  CHECK_INT(tr_roof_of_device("AMD Instinct MI250X", &r), 0);
  CHECK_INT(tr_roof_of_device(NULL, &r), 0);
}

static void roof_figures(void)
{
  struct tr_roof r;

  CHECK_INT(tr_roof_of_device("AMD Instinct MI300X", &r), 1);
  CHECK(r.tb_s == 5.3);
  CHECK(tr_roof_peak(&r, 'm', "bf16") == 1307.4);
  CHECK(tr_roof_peak(&r, 'm', "fp8") == 2614.9);
  CHECK(tr_roof_peak(&r, 'v', "fp32") == 163.4);
  CHECK(tr_roof_peak(&r, 'm', "fp4") == 0); /* no fp4 matrix units */
  CHECK(tr_roof_peak(&r, 'm', NULL) == 0);
  CHECK_INT(tr_roof_of_device("NVIDIA H100 80GB HBM3", &r), 1);
  /* The datasheet's 1979 TFLOPS of BF16 are with 2:4 sparsity. */
  CHECK(tr_roof_peak(&r, 'm', "bf16") == 989.4);
  CHECK(r.tb_s == 3.35);
}

static void roof_setting(void)
{
  static const char *const bad[] = {
    "MI300",
    "mi300x",
    ":tb_s=1",
    "X:",
    "X:bf16=100",
    "X:tb_s=",
    "X:tb_s=1,bogus=2",
    "X:tb_s=-1",
    "X:tb_s=1,bf16=1e9",
    "X:tb_s=1,",
    "X\ty:tb_s=1",
  };
  struct tr_err err = { 0 };
  struct tr_roof r;

  CHECK_INT(tr_roof_parse("MI355X", &r, &err), 0);
  CHECK(tr_roof_peak(&r, 'm', "fp4") == 10066.3);
  CHECK_INT(tr_roof_parse("lab card:tb_s=2.5,bf16=400,vec_fp32=50", &r, &err),
            0);
  CHECK_STR(r.name, "lab card");
  CHECK(r.source == NULL && r.tb_s == 2.5);
  CHECK(tr_roof_peak(&r, 'm', "bf16") == 400);
  CHECK(tr_roof_peak(&r, 'v', "bf16") == 50);
  CHECK(tr_roof_peak(&r, 'm', "fp8") == 0);
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    tr_err_clear(&err);
    CHECK(tr_roof_parse(bad[i], &r, &err) < 0);
    CHECK_STR(err.field, "gpu_roof");
  }
  /* The setting wins over the device; empty is the device's. */
  CHECK_INT(tr_roof_pick("B200", "AMD Instinct MI300X", &r), 1);
  CHECK_STR(r.name, "B200");
  CHECK_INT(tr_roof_pick("", "AMD Instinct MI300X", &r), 1);
  CHECK_STR(r.name, "MI300X");
}

static void roof_config_row(void)
{
  struct cfg cfg;
  struct tr_err err = { 0 };

  cfg_defaults(&cfg);
  CHECK_INT(cfg_set(&cfg, "gpu_roof", "H200", &err), 0);
  CHECK_INT(cfg_finish(&cfg, &err), 0);
  CHECK_STR(cfg.gpu_roof, "H200");
  cfg_free(&cfg);
  cfg_defaults(&cfg);
  CHECK_INT(cfg_set(&cfg, "gpu_roof", "H300", &err), 0);
  CHECK(cfg_finish(&cfg, &err) < 0);
  CHECK_STR(err.field, "gpu_roof");
  cfg_free(&cfg);
}

int main(void)
{
  RUN(roof_of_device_names);
  RUN(roof_figures);
  RUN(roof_setting);
  RUN(roof_config_row);
  return 0;
}
