/* The compiled host engine's table of learning runtimes. Generated from edgestream's state descriptions (edgestream.state);
 * regenerate with `python scripts/generate_headers.py`, never edit by hand. */
#ifndef ES_ENGINE_LEARNERS_H
#define ES_ENGINE_LEARNERS_H

#include <stddef.h>
#include "es_shrubs.h"
#include "es_bls.h"
#include "es_hoeffding.h"
#include "es_axgb.h"
#include "es_hst.h"
#include "es_loda.h"

typedef es_status (*es_engine_learn_fn)(const void *model, const void *row, int32_t target);
typedef es_status (*es_engine_proba_fn)(const void *model, const void *row, uint32_t *work, uint16_t *proba);
typedef es_status (*es_engine_output_fn)(const void *model, const void *row, uint32_t *work, uint16_t *proba,
                                          int32_t *out);

typedef struct {
    const char *prefix;
    const char *task;
    size_t model_bytes, config_bytes, counters_bytes;
    es_engine_learn_fn learn;
    es_engine_proba_fn predict_proba; /* NULL: a regressor */
    es_engine_output_fn predict;
} es_engine_learner;

static es_status es_shrubs_engine_learn(const void *model, const void *row, int32_t target)
{
    return es_shrubs_learn((const es_shrubs *)model, (const uint8_t *)row, (uint8_t)target);
}

static es_status es_shrubs_engine_proba(const void *model, const void *row, uint32_t *work, uint16_t *proba)
{
    return es_shrubs_predict_proba((const es_shrubs *)model, (const uint8_t *)row, work, proba);
}

static es_status es_shrubs_engine_output(const void *model, const void *row, uint32_t *work, uint16_t *proba,
                                  int32_t *out)
{
    uint8_t class_out = 0;
    es_status status;
    status = es_shrubs_predict((const es_shrubs *)model, (const uint8_t *)row, work, proba, &class_out);
    *out = class_out;
    return status;
}

static es_status es_shrubs_engine_learn_regression(const void *model, const void *row, int32_t target)
{
    return es_shrubs_learn_target((const es_shrubs *)model, (const uint8_t *)row, (int16_t)target);
}

static es_status es_shrubs_engine_output_regression(const void *model, const void *row, uint32_t *work, uint16_t *proba,
                                  int32_t *out)
{
    (void)work;
    (void)proba;
    return es_shrubs_predict_raw((const es_shrubs *)model, (const uint8_t *)row, out);
}

static es_status es_bls_engine_learn(const void *model, const void *row, int32_t target)
{
    return es_bls_learn((const es_bls *)model, (const float *)row, (uint8_t)target);
}

static es_status es_bls_engine_proba(const void *model, const void *row, uint32_t *work, uint16_t *proba)
{
    return es_bls_predict_proba((const es_bls *)model, (const float *)row, work, proba);
}

static es_status es_bls_engine_output(const void *model, const void *row, uint32_t *work, uint16_t *proba,
                                  int32_t *out)
{
    uint8_t class_out = 0;
    es_status status;
    (void)work;
    (void)proba;
    status = es_bls_predict((const es_bls *)model, (const float *)row, &class_out);
    *out = class_out;
    return status;
}

static es_status es_bls_engine_learn_regression(const void *model, const void *row, int32_t target)
{
    return es_bls_learn_target((const es_bls *)model, (const float *)row, (int16_t)target);
}

static es_status es_bls_engine_output_regression(const void *model, const void *row, uint32_t *work, uint16_t *proba,
                                  int32_t *out)
{
    (void)work;
    (void)proba;
    return es_bls_predict_raw((const es_bls *)model, (const float *)row, out);
}

static es_status es_hoeffding_engine_learn(const void *model, const void *row, int32_t target)
{
    return es_hoeffding_learn((const es_hoeffding *)model, (const float *)row, (uint8_t)target);
}

static es_status es_hoeffding_engine_proba(const void *model, const void *row, uint32_t *work, uint16_t *proba)
{
    return es_hoeffding_predict_proba((const es_hoeffding *)model, (const float *)row, work, proba);
}

static es_status es_hoeffding_engine_output(const void *model, const void *row, uint32_t *work, uint16_t *proba,
                                  int32_t *out)
{
    uint8_t class_out = 0;
    es_status status;
    status = es_hoeffding_predict((const es_hoeffding *)model, (const float *)row, work, proba, &class_out);
    *out = class_out;
    return status;
}

static es_status es_hoeffding_engine_learn_regression(const void *model, const void *row, int32_t target)
{
    return es_hoeffding_learn_target((const es_hoeffding *)model, (const float *)row, (int16_t)target);
}

static es_status es_hoeffding_engine_output_regression(const void *model, const void *row, uint32_t *work, uint16_t *proba,
                                  int32_t *out)
{
    (void)work;
    (void)proba;
    return es_hoeffding_predict_raw((const es_hoeffding *)model, (const float *)row, out);
}

static es_status es_axgb_engine_learn(const void *model, const void *row, int32_t target)
{
    return es_axgb_learn((const es_axgb *)model, (const uint8_t *)row, (uint8_t)target);
}

static es_status es_axgb_engine_proba(const void *model, const void *row, uint32_t *work, uint16_t *proba)
{
    return es_axgb_predict_proba((const es_axgb *)model, (const uint8_t *)row, work, proba);
}

static es_status es_axgb_engine_output(const void *model, const void *row, uint32_t *work, uint16_t *proba,
                                  int32_t *out)
{
    uint8_t class_out = 0;
    es_status status;
    (void)work;
    (void)proba;
    status = es_axgb_predict((const es_axgb *)model, (const uint8_t *)row, &class_out);
    *out = class_out;
    return status;
}

static es_status es_axgb_engine_learn_regression(const void *model, const void *row, int32_t target)
{
    return es_axgb_learn_target((const es_axgb *)model, (const uint8_t *)row, (int16_t)target);
}

static es_status es_axgb_engine_output_regression(const void *model, const void *row, uint32_t *work, uint16_t *proba,
                                  int32_t *out)
{
    (void)work;
    (void)proba;
    return es_axgb_predict_raw((const es_axgb *)model, (const uint8_t *)row, out);
}

static es_status es_hst_engine_learn_anomaly(const void *model, const void *row, int32_t target)
{
    (void)target;
    return es_hst_learn((const es_hst *)model, (const float *)row);
}

static es_status es_hst_engine_output_anomaly(const void *model, const void *row, uint32_t *work, uint16_t *proba,
                                  int32_t *out)
{
    (void)work;
    (void)proba;
    return es_hst_score((const es_hst *)model, (const float *)row, out);
}

static es_status es_loda_engine_learn_anomaly(const void *model, const void *row, int32_t target)
{
    (void)target;
    return es_loda_learn((const es_loda *)model, (const float *)row);
}

static es_status es_loda_engine_output_anomaly(const void *model, const void *row, uint32_t *work, uint16_t *proba,
                                  int32_t *out)
{
    (void)work;
    (void)proba;
    return es_loda_score((const es_loda *)model, (const float *)row, out);
}

static const es_engine_learner es_engine_learners[] = {
    { "es_shrubs", "classification", sizeof(es_shrubs), sizeof(es_shrubs_config), sizeof(es_shrubs_counters), es_shrubs_engine_learn, es_shrubs_engine_proba, es_shrubs_engine_output },
    { "es_shrubs", "regression", sizeof(es_shrubs), sizeof(es_shrubs_config), sizeof(es_shrubs_counters), es_shrubs_engine_learn_regression, NULL, es_shrubs_engine_output_regression },
    { "es_bls", "classification", sizeof(es_bls), sizeof(es_bls_config), sizeof(es_bls_counters), es_bls_engine_learn, es_bls_engine_proba, es_bls_engine_output },
    { "es_bls", "regression", sizeof(es_bls), sizeof(es_bls_config), sizeof(es_bls_counters), es_bls_engine_learn_regression, NULL, es_bls_engine_output_regression },
    { "es_hoeffding", "classification", sizeof(es_hoeffding), sizeof(es_hoeffding_config), sizeof(es_hoeffding_counters), es_hoeffding_engine_learn, es_hoeffding_engine_proba, es_hoeffding_engine_output },
    { "es_hoeffding", "regression", sizeof(es_hoeffding), sizeof(es_hoeffding_config), sizeof(es_hoeffding_counters), es_hoeffding_engine_learn_regression, NULL, es_hoeffding_engine_output_regression },
    { "es_axgb", "classification", sizeof(es_axgb), sizeof(es_axgb_config), sizeof(es_axgb_counters), es_axgb_engine_learn, es_axgb_engine_proba, es_axgb_engine_output },
    { "es_axgb", "regression", sizeof(es_axgb), sizeof(es_axgb_config), sizeof(es_axgb_counters), es_axgb_engine_learn_regression, NULL, es_axgb_engine_output_regression },
    { "es_hst", "anomaly", sizeof(es_hst), sizeof(es_hst_config), sizeof(es_hst_counters), es_hst_engine_learn_anomaly, NULL, es_hst_engine_output_anomaly },
    { "es_loda", "anomaly", sizeof(es_loda), sizeof(es_loda_config), sizeof(es_loda_counters), es_loda_engine_learn_anomaly, NULL, es_loda_engine_output_anomaly },
};

#define ES_ENGINE_N_LEARNERS 10

#endif
