/* config.json <-> mt_model_config through an architecture's key table: one list of (key, type,
 * field offset, range, default) read by mt_config_keys_read and written, in the table's order, by
 * mt_config_keys_write, so a key cannot be read one way and written another. */
#include "models/model_internal.h"

#include <stdio.h>
#include <string.h>

#include "mtlab/error.h"

static int *int_field(mt_model_config *cfg, const mt_config_key *k)
{
    return (int *)((char *)cfg + k->offset);
}

static const int *int_value(const mt_model_config *cfg, const mt_config_key *k)
{
    return (const int *)((const char *)cfg + k->offset);
}

static const float *float_value(const mt_model_config *cfg, const mt_config_key *k)
{
    return (const float *)((const char *)cfg + k->offset);
}

static int read_key(mt_model_config *cfg, const mt_config *c, const mt_config_key *k,
                    const char *model)
{
    int optional = (k->flags & MT_KEY_OPTIONAL) != 0, v;
    switch (k->type) {
    case MT_KEY_INT:
        return optional ? mt_config_int_or(c, k->name, (int)k->def, (int)k->lo, (int)k->hi,
                                           int_field(cfg, k))
                        : mt_config_int(c, k->name, (int)k->lo, (int)k->hi, int_field(cfg, k));
    case MT_KEY_FLOAT: {
        float *f = (float *)((char *)cfg + k->offset);
        return optional ? mt_config_float_or(c, k->name, (float)k->def, k->lo, k->hi, f)
                        : mt_config_float(c, k->name, k->lo, k->hi, f);
    }
    case MT_KEY_BOOL:
    case MT_KEY_NOT_BOOL:
        if (mt_config_bool_or(c, k->name, (int)k->def, &v)) return -1;
        *int_field(cfg, k) = k->type == MT_KEY_BOOL ? v : !v;
        return 0;
    case MT_KEY_TOKEN_ID: return mt_model_config_token_id(c, k->name, int_field(cfg, k));
    case MT_KEY_FIXED_BOOL: return mt_model_config_fixed_bool(c, k->name, (int)k->def, model);
    case MT_KEY_FIXED_STRING: {
        const char *s = mt_config_string_or(c, k->name, k->str);
        if (!s) return -1;
        if (strcmp(s, k->str) != 0 && !(k->alt && !strcmp(s, k->alt)))
            return mt_error("%s: %s \"%s\" is not supported (%s)", mt_config_name(c), k->name, s,
                            k->why);
        return 0;
    }
    case MT_KEY_SAME_INT:
        if (mt_config_int_or(c, k->name, *int_field(cfg, k), 0, 1 << 30, &v)) return -1;
        if (v != *int_field(cfg, k))
            return mt_error("%s: %s = %d differs from %s = %d (mtlab needs them equal)",
                            mt_config_name(c), k->name, v, k->str, *int_field(cfg, k));
        return 0;
    case MT_KEY_CONST_STRING:
    case MT_KEY_CONST_BOOL:
    case MT_KEY_CONST_FLOAT:
    case MT_KEY_CONST_CLASS: return 0;
    case MT_KEY_CUSTOM: return k->read ? k->read(cfg, c) : 0;
    }
    return mt_error("%s: key '%s' has no reader", mt_config_name(c), k->name);
}

int mt_config_keys_read(mt_model_config *cfg, const mt_config *c, const mt_config_key *keys,
                        const char *model)
{
    for (const mt_config_key *k = keys; k->name; k++)
        if (!(k->flags & MT_KEY_WRITE_ONLY) && read_key(cfg, c, k, model)) return -1;
    return 0;
}

int mt_config_keys_write(const mt_model_config *cfg, mt_config *o, const mt_config_key *keys)
{
    int rc = 0;
    for (const mt_config_key *k = keys; k->name; k++) {
        if (k->flags & MT_KEY_READ_ONLY) continue;
        switch (k->type) {
        case MT_KEY_INT:
        case MT_KEY_TOKEN_ID:
        case MT_KEY_SAME_INT: rc |= mt_config_set_int(o, k->name, *int_value(cfg, k)); break;
        case MT_KEY_FLOAT: rc |= mt_config_set_float(o, k->name, *float_value(cfg, k)); break;
        case MT_KEY_BOOL: rc |= mt_config_set_bool(o, k->name, *int_value(cfg, k)); break;
        case MT_KEY_NOT_BOOL: rc |= mt_config_set_bool(o, k->name, !*int_value(cfg, k)); break;
        case MT_KEY_FIXED_BOOL: rc |= mt_config_set_bool(o, k->name, (int)k->def); break;
        case MT_KEY_FIXED_STRING:
        case MT_KEY_CONST_STRING: rc |= mt_config_set_string(o, k->name, k->str); break;
        case MT_KEY_CONST_BOOL: rc |= mt_config_set_bool(o, k->name, (int)k->def); break;
        case MT_KEY_CONST_FLOAT: rc |= mt_config_set_float(o, k->name, (float)k->def); break;
        case MT_KEY_CONST_CLASS: rc |= mt_config_set_string_list(o, k->name, &k->str, 1); break;
        case MT_KEY_CUSTOM: rc |= k->write(cfg, o); break;
        }
    }
    return rc ? -1 : 0;
}

int mt_arch_config_read(const mt_arch *a, mt_model_config *cfg, const mt_config *c)
{
    memset(cfg, 0, sizeof *cfg);
    mt_model_config_init_ids(cfg);
    snprintf(cfg->arch, sizeof cfg->arch, "%s", a->name);
    for (size_t t = 0; t < sizeof a->keys / sizeof *a->keys && a->keys[t].keys; t++)
        if (mt_config_keys_read(cfg, c, a->keys[t].keys, a->keys[t].model)) return -1;
    return mt_model_config_read_mtlab(cfg, c, a->encdec);
}

int mt_arch_config_write(const mt_arch *a, const mt_model_config *cfg, mt_config *o)
{
    int rc = 0;
    for (size_t t = 0; t < sizeof a->keys / sizeof *a->keys && a->keys[t].keys; t++)
        rc |= mt_config_keys_write(cfg, o, a->keys[t].keys);
    rc |= mt_model_config_write_mtlab(cfg, o, a->mtlab_dropout);
    return rc ? -1 : 0;
}
