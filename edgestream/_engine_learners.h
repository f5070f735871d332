/* The compiled host engine's table of learning runtimes. Generated from edgestream's state descriptions (edgestream.state);
 * regenerate with `python scripts/generate_headers.py`, never edit by hand. */
#ifndef ES_ENGINE_LEARNERS_H
#define ES_ENGINE_LEARNERS_H

#include <stddef.h>
#include "es_shrubs.h"
#include "es_bls.h"
#include "es_hoeffding.h"
#include "es_axgb.h"

typedef es_status (*es_engine_learn_fn)(const void *model, const void *row, uint8_t label);
typedef es_status (*es_engine_proba_fn)(const void *model, const void *row, uint32_t *work, uint16_t *proba);
typedef es_status (*es_engine_class_fn)(const void *model, const void *row, uint32_t *work, uint16_t *proba,
                                         uint8_t *class_out);

typedef struct {
    const char *prefix;
    size_t model_bytes, config_bytes, counters_bytes;
    es_engine_learn_fn learn;
    es_engine_proba_fn predict_proba;
    es_engine_class_fn predict;
} es_engine_learner;

static es_status es_shrubs_engine_learn(const void *model, const void *row, uint8_t label)
{
    return es_shrubs_learn((const es_shrubs *)model, (const uint8_t *)row, label);
}

static es_status es_shrubs_engine_proba(const void *model, const void *row, uint32_t *work, uint16_t *proba)
{
    return es_shrubs_predict_proba((const es_shrubs *)model, (const uint8_t *)row, work, proba);
}

static es_status es_shrubs_engine_class(const void *model, const void *row, uint32_t *work, uint16_t *proba,
                                  uint8_t *class_out)
{
    return es_shrubs_predict((const es_shrubs *)model, (const uint8_t *)row, work, proba, class_out);
}

static es_status es_bls_engine_learn(const void *model, const void *row, uint8_t label)
{
    return es_bls_learn((const es_bls *)model, (const float *)row, label);
}

static es_status es_bls_engine_proba(const void *model, const void *row, uint32_t *work, uint16_t *proba)
{
    return es_bls_predict_proba((const es_bls *)model, (const float *)row, work, proba);
}

static es_status es_bls_engine_class(const void *model, const void *row, uint32_t *work, uint16_t *proba,
                                  uint8_t *class_out)
{
    (void)work;
    (void)proba;
    return es_bls_predict((const es_bls *)model, (const float *)row, class_out);
}

static es_status es_hoeffding_engine_learn(const void *model, const void *row, uint8_t label)
{
    return es_hoeffding_learn((const es_hoeffding *)model, (const float *)row, label);
}

static es_status es_hoeffding_engine_proba(const void *model, const void *row, uint32_t *work, uint16_t *proba)
{
    return es_hoeffding_predict_proba((const es_hoeffding *)model, (const float *)row, work, proba);
}

static es_status es_hoeffding_engine_class(const void *model, const void *row, uint32_t *work, uint16_t *proba,
                                  uint8_t *class_out)
{
    return es_hoeffding_predict((const es_hoeffding *)model, (const float *)row, work, proba, class_out);
}

static es_status es_axgb_engine_learn(const void *model, const void *row, uint8_t label)
{
    return es_axgb_learn((const es_axgb *)model, (const uint8_t *)row, label);
}

static es_status es_axgb_engine_proba(const void *model, const void *row, uint32_t *work, uint16_t *proba)
{
    return es_axgb_predict_proba((const es_axgb *)model, (const uint8_t *)row, work, proba);
}

static es_status es_axgb_engine_class(const void *model, const void *row, uint32_t *work, uint16_t *proba,
                                  uint8_t *class_out)
{
    (void)work;
    (void)proba;
    return es_axgb_predict((const es_axgb *)model, (const uint8_t *)row, class_out);
}

static const es_engine_learner es_engine_learners[] = {
    { "es_shrubs", sizeof(es_shrubs), sizeof(es_shrubs_config), sizeof(es_shrubs_counters), es_shrubs_engine_learn, es_shrubs_engine_proba, es_shrubs_engine_class },
    { "es_bls", sizeof(es_bls), sizeof(es_bls_config), sizeof(es_bls_counters), es_bls_engine_learn, es_bls_engine_proba, es_bls_engine_class },
    { "es_hoeffding", sizeof(es_hoeffding), sizeof(es_hoeffding_config), sizeof(es_hoeffding_counters), es_hoeffding_engine_learn, es_hoeffding_engine_proba, es_hoeffding_engine_class },
    { "es_axgb", sizeof(es_axgb), sizeof(es_axgb_config), sizeof(es_axgb_counters), es_axgb_engine_learn, es_axgb_engine_proba, es_axgb_engine_class },
};

#define ES_ENGINE_N_LEARNERS 4

#endif
