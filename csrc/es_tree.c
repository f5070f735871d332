#include "es_tree.h"

uint16_t es_tree_leaf(const es_node *nodes, uint16_t root, const uint8_t *bins)
{
    const es_node *node = &nodes[root];
    while (node->feature != ES_LEAF) {
        /* Children are stored next to each other, so the comparison picks left (+0) or right (+1). */
        node = &nodes[node->child + (bins[node->feature] > node->threshold ? 1u : 0u)];
    }
    return node->child;
}

es_status es_ensemble_predict_proba(const es_ensemble *model, const uint8_t *bins, uint32_t *acc,
                                    uint16_t *proba)
{
    uint32_t total_weight = 0;
    uint16_t t;
    uint8_t k;
    if (model == 0 || bins == 0 || acc == 0 || proba == 0) {
        return ES_ERR_NULL;
    }
    for (k = 0; k < model->n_classes; k++) {
        acc[k] = 0;
    }
    for (t = 0; t < model->n_trees; t++) {
        const uint16_t leaf = es_tree_leaf(model->nodes, model->roots[t], bins);
        const uint16_t *values = &model->leaf_values[(uint32_t)leaf * model->n_classes];
        const uint32_t weight = model->weights[t];
        for (k = 0; k < model->n_classes; k++) {
            acc[k] += weight * values[k];
        }
        total_weight += weight;
    }
    if (total_weight == 0) {
        return ES_ERR_MODEL;
    }
    for (k = 0; k < model->n_classes; k++) {
        proba[k] = (uint16_t)((acc[k] + total_weight / 2u) / total_weight);
    }
    return ES_OK;
}

uint8_t es_argmax(const uint16_t *proba, uint8_t n_classes)
{
    uint8_t k;
    uint8_t best = 0;
    for (k = 1; k < n_classes; k++) {
        if (proba[k] > proba[best]) {
            best = k;
        }
    }
    return best;
}

es_status es_ensemble_predict(const es_ensemble *model, const uint8_t *bins, uint32_t *acc, uint16_t *proba,
                              uint8_t *class_out)
{
    es_status status;
    if (class_out == 0) {
        return ES_ERR_NULL;
    }
    status = es_ensemble_predict_proba(model, bins, acc, proba);
    if (status == ES_OK) {
        *class_out = es_argmax(proba, model->n_classes);
    }
    return status;
}
