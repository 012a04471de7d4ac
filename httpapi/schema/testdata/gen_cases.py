#!/usr/bin/python3
"""Generate ../cases_gen_test.go: expectations produced by Python jsonschema.

Every expected string in the generated file is what the real Python
jsonschema (4.10.3, the version installed where this was run) and CPython's
pprint/repr produce for the same schema and instance. Request body schemas
are validated as upstream's util.extract_json does, with a FormatChecker
whose "uuid" check is oslo's uuidutils.is_uuid_like (its definition is
repeated below when oslo.utils is not installed). Upstream Placement's
own schema dicts are imported (from a placement source tree) and serialised
with json.dumps, which keeps their key order, so the Go side compiles exactly
the schema Python iterates.

Usage (from the repository root):

    /usr/bin/python3 httpapi/schema/testdata/gen_cases.py \
        --placement /work/ref > httpapi/schema/cases_gen_test.go
    gofmt -w httpapi/schema/cases_gen_test.go

--placement is the directory containing the `placement` package.
"""

import argparse
import importlib.metadata
import json
import pprint
import sys

import jsonschema

parser = argparse.ArgumentParser()
parser.add_argument("--placement", required=True)
args = parser.parse_args()
sys.path.insert(0, args.placement)

from placement.schemas import aggregate  # noqa: E402
from placement.schemas import allocation  # noqa: E402
from placement.schemas import allocation_candidate  # noqa: E402
from placement.schemas import inventory  # noqa: E402
from placement.schemas import reshaper  # noqa: E402
from placement.schemas import resource_class  # noqa: E402
from placement.schemas import resource_provider  # noqa: E402
from placement.schemas import trait  # noqa: E402
from placement.schemas import usage  # noqa: E402

JSONSCHEMA_VERSION = importlib.metadata.version("jsonschema")

try:
    from oslo_utils.uuidutils import is_uuid_like
except ImportError:
    import uuid

    # oslo_utils.uuidutils.is_uuid_like, verbatim in behaviour.
    def _format_uuid_string(string):
        return (string.replace('urn:', '')
                      .replace('uuid:', '')
                      .strip('{}')
                      .replace('-', '')
                      .lower())

    def is_uuid_like(val):
        try:
            return (str(uuid.UUID(val)).replace('-', '') ==
                    _format_uuid_string(val))
        except (TypeError, ValueError, AttributeError):
            return False

# Upstream's util.extract_json validates request bodies with this checker;
# util.validate_query_params uses a plain jsonschema.FormatChecker().
BODY_FORMAT_CHECKER = jsonschema.FormatChecker()


@BODY_FORMAT_CHECKER.checks('uuid')
def _validate_uuid_format(instance):
    return is_uuid_like(instance)

UUID = "5f9588de-079d-462a-a459-408524ab9b60"
UUID2 = "0b2c687e-89eb-47f6-bb68-2fc83e28032a"

# Schemas, by name: upstream Placement's, plus small generic ones.
SCHEMAS = {
    "rp_post": resource_provider.POST_RESOURCE_PROVIDER_SCHEMA,
    "rp_post_1_14": resource_provider.POST_RP_SCHEMA_V1_14,
    "rp_put_1_14": resource_provider.PUT_RP_SCHEMA_V1_14,
    "rps_get_1_18": resource_provider.GET_RPS_SCHEMA_1_18,
    "inventory_post": inventory.POST_INVENTORY_SCHEMA,
    "inventory_put": inventory.PUT_INVENTORY_SCHEMA,
    "inventory_base": inventory.BASE_INVENTORY_SCHEMA,
    "alloc": allocation.ALLOCATION_SCHEMA,
    "alloc_1_8": allocation.ALLOCATION_SCHEMA_V1_8,
    "alloc_1_12": allocation.ALLOCATION_SCHEMA_V1_12,
    "alloc_1_28": allocation.ALLOCATION_SCHEMA_V1_28,
    "alloc_1_34": allocation.ALLOCATION_SCHEMA_V1_34,
    "alloc_1_38": allocation.ALLOCATION_SCHEMA_V1_38,
    "allocs_post_1_13": allocation.POST_ALLOCATIONS_V1_13,
    "allocs_post_1_38": allocation.POST_ALLOCATIONS_V1_38,
    "traits_put": trait.PUT_TRAITS_SCHEMA,
    "rp_traits_put": trait.SET_TRAITS_FOR_RP_SCHEMA,
    "custom_trait": trait.CUSTOM_TRAIT,
    "aggregates_1_1": aggregate.PUT_AGGREGATES_SCHEMA_V1_1,
    "aggregates_1_19": aggregate.PUT_AGGREGATES_SCHEMA_V1_19,
    "ac_get_1_16": allocation_candidate.GET_SCHEMA_1_16,
    "ac_get_1_25": allocation_candidate.GET_SCHEMA_1_25,
    "ac_get_1_33": allocation_candidate.GET_SCHEMA_1_33,
    "ac_get_1_36": allocation_candidate.GET_SCHEMA_1_36,
    "usages_get_1_38": usage.GET_USAGES_SCHEMA_V1_38,
    "rc_post": resource_class.POST_RC_SCHEMA_V1_2,
    "reshaper_1_38": reshaper.POST_RESHAPER_SCHEMA_V1_38,
    # Generic schemas for single keywords.
    "g_type_int": {"type": "integer"},
    "g_type_num": {"type": "number"},
    "g_type_str": {"type": "string"},
    "g_type_bool": {"type": "boolean"},
    "g_type_null": {"type": "null"},
    "g_type_obj": {"type": "object"},
    "g_type_arr": {"type": "array"},
    "g_type_list": {"type": ["integer", "null"]},
    "g_enum": {"enum": [1, "a", None, [1, 2], {"k": "v"}]},
    "g_enum_true": {"enum": [True]},
    "g_enum_zero": {"enum": [0]},
    "g_const": {"const": {"a": [1, True]}},
    "g_min": {"minimum": 1.5},
    "g_max": {"maximum": 10},
    "g_xmin": {"exclusiveMinimum": 0},
    "g_xmax": {"exclusiveMaximum": 2.5},
    "g_multiple_int": {"multipleOf": 3},
    "g_multiple_float": {"multipleOf": 0.5},
    "g_len": {"type": "string", "minLength": 2, "maxLength": 4},
    "g_items": {
        "type": "array",
        "minItems": 1,
        "maxItems": 3,
        "uniqueItems": True,
        "items": {"type": "integer"},
    },
    "g_items_false": {"items": False},
    "g_props": {
        "properties": {"a": False, "b": True},
        "additionalProperties": {"type": "string"},
        "minProperties": 1,
        "maxProperties": 2,
    },
    "g_pattern": {"pattern": "^a+$"},
    "g_pattern_unanchored": {"pattern": "[0-9]"},
    "g_format": {"format": "uuid"},
    "gb_format": {"format": "uuid"},
    "g_anyof": {"anyOf": [{"type": "string", "minLength": 3},
                          {"type": "integer", "minimum": 5}]},
    "g_oneof": {"oneOf": [{"type": "integer"}, {"type": "number"},
                          {"minimum": 0}]},
    "g_oneof_none": {"oneOf": [{"type": "string"}, {"type": "array"}]},
    "g_allof": {"allOf": [{"minimum": 2}, {"maximum": 1}]},
    "g_not": {"not": {"type": "string"}},
    "g_false": False,
    "g_nested_anyof": {
        "type": "object",
        "properties": {
            "x": {"anyOf": [
                {"type": "object", "required": ["y"]},
                {"type": "null"},
            ]},
        },
    },
    "g_pp_extras": {
        "type": "object",
        "patternProperties": {"^b": {}, "^a": {}},
        "additionalProperties": False,
    },
    "g_order": {
        "required": ["z"],
        "type": "object",
        "maxProperties": 1,
    },
}

R = UUID
ALLOC_LIST_OK = ('{"allocations": [{"resource_provider": {"uuid": "%s"}, '
                 '"resources": {"DISK_GB": 10}}]}' % R)

# Schemas validated as query strings (jsonschema's own uuid check, and
# Compile on the Go side); the others are request bodies (oslo's
# is_uuid_like, CompileBody). Generic "g_" schemas use jsonschema's check.
QUERY_SCHEMAS = {"rps_get_1_18", "ac_get_1_16", "ac_get_1_25", "ac_get_1_33",
                 "ac_get_1_36", "usages_get_1_38"}


def is_body(schema_name):
    return schema_name not in QUERY_SCHEMAS and not schema_name.startswith("g_")


# (name, schema name, instance as JSON text)
CASES = [
    # Resource providers.
    ("rp_post_ok", "rp_post", '{"name": "rp1", "uuid": "%s"}' % R),
    ("rp_post_required", "rp_post", "{}"),
    ("rp_post_required_with_extra", "rp_post", '{"bad_field": 1}'),
    ("rp_post_extra", "rp_post", '{"name": "rp1", "bad_field": 1}'),
    ("rp_post_extras", "rp_post", '{"name": "rp1", "zz": 1, "aa": [1]}'),
    ("rp_post_name_int", "rp_post", '{"name": 5}'),
    ("rp_post_name_null", "rp_post", '{"name": null}'),
    ("rp_post_name_too_long", "rp_post", '{"name": "%s"}' % ("a" * 201)),
    ("rp_post_name_too_long_spaces", "rp_post",
     '{"name": "%s"}' % ("word " * 41)),
    ("rp_post_bad_uuid", "rp_post", '{"name": "rp1", "uuid": "not-a-uuid"}'),
    ("rp_post_uuid_no_dashes", "rp_post",
     '{"name": "rp1", "uuid": "%s"}' % R.replace("-", "")),
    ("rp_post_uuid_int", "rp_post", '{"name": "rp1", "uuid": 5}'),
    ("rp_post_path_beats_order", "rp_post", '{"name": 5, "bad": 1}'),
    ("rp_post_not_object", "rp_post", '["name"]'),
    ("rp_post_parent_int", "rp_post_1_14",
     '{"name": "rp1", "parent_provider_uuid": 5}'),
    ("rp_post_parent_bad_uuid", "rp_post_1_14",
     '{"name": "rp1", "parent_provider_uuid": "bogus"}'),
    ("rp_post_parent_null", "rp_post_1_14",
     '{"name": "rp1", "parent_provider_uuid": null}'),
    ("rp_put_uuid_extra", "rp_put_1_14", '{"name": "rp1", "uuid": "%s"}' % R),
    ("rps_get_bad_in_tree", "rps_get_1_18",
     '{"in_tree": "x", "resources": "VCPU:1"}'),
    ("rps_get_unknown_param", "rps_get_1_18", '{"bogus": "1"}'),
    # Inventories.
    ("inv_put_ok", "inventory_put",
     '{"resource_provider_generation": 1, "inventories": {"VCPU": '
     '{"total": 8, "allocation_ratio": 16.0}}}'),
    ("inv_put_total_zero", "inventory_put",
     '{"resource_provider_generation": 1, "inventories": '
     '{"VCPU": {"total": 0}}}'),
    ("inv_put_two_bad_doc_order", "inventory_put",
     '{"resource_provider_generation": 1, "inventories": '
     '{"VCPU": {"total": 0}, "DISK_GB": {"total": -4}}}'),
    ("inv_put_total_too_big", "inventory_put",
     '{"resource_provider_generation": 1, "inventories": '
     '{"VCPU": {"total": 2147483648}}}'),
    ("inv_put_total_float", "inventory_put",
     '{"resource_provider_generation": 1, "inventories": '
     '{"VCPU": {"total": 1.5}}}'),
    ("inv_put_total_integral_float", "inventory_put",
     '{"resource_provider_generation": 1, "inventories": '
     '{"VCPU": {"total": 2.0}}}'),
    ("inv_put_total_bool", "inventory_put",
     '{"resource_provider_generation": 1, "inventories": '
     '{"VCPU": {"total": true}}}'),
    ("inv_put_ratio_too_big", "inventory_put",
     '{"resource_provider_generation": 1, "inventories": '
     '{"VCPU": {"total": 1, "allocation_ratio": 5e38}}}'),
    ("inv_put_ratio_inf", "inventory_put",
     '{"resource_provider_generation": 1, "inventories": '
     '{"VCPU": {"total": 1, "allocation_ratio": 1E400}}}'),
    ("inv_put_missing_total", "inventory_put",
     '{"resource_provider_generation": 1, "inventories": '
     '{"VCPU": {"reserved": 1, "min_unit": 1, "max_unit": 4, '
     '"step_size": 1, "allocation_ratio": 1.0}}}'),
    ("inv_put_lowercase_rc_ignored", "inventory_put",
     '{"resource_provider_generation": 1, "inventories": '
     '{"vcpu": {"total": 0}}}'),
    ("inv_put_missing_generation", "inventory_put", '{"inventories": {}}'),
    ("inv_put_extra", "inventory_put",
     '{"resource_provider_generation": 1, "inventories": {}, "x": 1}'),
    ("inv_post_bad_rc", "inventory_post",
     '{"resource_class": "vcpu", "total": 1}'),
    ("inv_post_reserved_neg", "inventory_post",
     '{"resource_class": "VCPU", "total": 1, "reserved": -1}'),
    ("inv_base_big_int", "inventory_base",
     '{"resource_provider_generation": 1, "total": '
     '123456789012345678901234567890}'),
    # Allocations.
    ("alloc_ok", "alloc", ALLOC_LIST_OK),
    ("alloc_empty_list", "alloc", '{"allocations": []}'),
    ("alloc_zero", "alloc",
     '{"allocations": [{"resource_provider": {"uuid": "%s"}, '
     '"resources": {"DISK_GB": 0}}]}' % R),
    ("alloc_missing_rp", "alloc",
     '{"allocations": [{"resources": {"DISK_GB": 10}}]}'),
    ("alloc_bad_rc", "alloc",
     '{"allocations": [{"resource_provider": {"uuid": "%s"}, '
     '"resources": {"disk_gb": 10}}]}' % R),
    ("alloc_1_8_missing_user", "alloc_1_8",
     '{"allocations": [{"resource_provider": {"uuid": "%s"}, '
     '"resources": {"DISK_GB": 10}}], "project_id": "p"}' % R),
    ("alloc_1_8_empty_project", "alloc_1_8",
     '{"allocations": [{"resource_provider": {"uuid": "%s"}, '
     '"resources": {"DISK_GB": 10}}], "project_id": "", "user_id": "u"}' % R),
    ("alloc_1_8_long_user", "alloc_1_8",
     '{"allocations": [{"resource_provider": {"uuid": "%s"}, '
     '"resources": {"DISK_GB": 10}}], "project_id": "p", "user_id": "%s"}'
     % (R, "u" * 256)),
    ("alloc_1_12_list", "alloc_1_12", ALLOC_LIST_OK[:-1] +
     ', "project_id": "p", "user_id": "u"}'),
    ("alloc_1_12_bad_rp_key", "alloc_1_12",
     '{"allocations": {"nice_house_friend": {"resources": '
     '{"VCPU": 1, "DISK_GB": 20}}}, "project_id": "p", "user_id": "u"}'),
    ("alloc_1_12_bad_rc_key", "alloc_1_12",
     '{"allocations": {"%s": {"resources": {"vcpu": 1, "DISK_GB": 20}}}, '
     '"project_id": "p", "user_id": "u"}' % R),
    ("alloc_1_12_empty", "alloc_1_12",
     '{"allocations": {}, "project_id": "p", "user_id": "u"}'),
    ("alloc_1_12_empty_resources", "alloc_1_12",
     '{"allocations": {"%s": {"resources": {}}}, '
     '"project_id": "p", "user_id": "u"}' % R),
    ("alloc_1_28_bad_generation", "alloc_1_28",
     '{"allocations": {}, "project_id": "p", "user_id": "u", '
     '"consumer_generation": "x"}'),
    ("alloc_1_28_missing_generation", "alloc_1_28",
     '{"allocations": {}, "project_id": "p", "user_id": "u"}'),
    ("alloc_1_34_mapping_bad_form", "alloc_1_34",
     '{"allocations": {}, "mappings": {"alpha": "beta"}, '
     '"consumer_generation": null, "project_id": "p", "user_id": "u"}'),
    ("alloc_1_34_mapping_empty", "alloc_1_34",
     '{"allocations": {}, "mappings": {}, '
     '"consumer_generation": null, "project_id": "p", "user_id": "u"}'),
    ("alloc_1_34_mapping_bad_uuid", "alloc_1_34",
     '{"allocations": {}, "mappings": {"": ["%s"], "g": ["%s", "x"]}, '
     '"consumer_generation": null, "project_id": "p", "user_id": "u"}'
     % (R, R)),
    ("alloc_1_38_bad_consumer_type", "alloc_1_38",
     '{"allocations": {}, "consumer_generation": null, "project_id": "p", '
     '"user_id": "u", "consumer_type": "instance"}'),
    ("alloc_1_38_missing_consumer_type", "alloc_1_38",
     '{"allocations": {}, "consumer_generation": null, "project_id": "p", '
     '"user_id": "u"}'),
    ("allocs_post_1_13_empty", "allocs_post_1_13", "{}"),
    ("allocs_post_1_13_bad_key", "allocs_post_1_13", '{"x": {}}'),
    ("allocs_post_1_38_deep", "allocs_post_1_38",
     '{"%s": {"allocations": {"%s": {"resources": {"VCPU": 0}}}, '
     '"consumer_generation": null, "project_id": "p", "user_id": "u", '
     '"consumer_type": "INSTANCE"}}' % (R, UUID2)),
    ("allocs_post_1_38_two_bad", "allocs_post_1_38",
     '{"%s": {"allocations": {}, "consumer_generation": null, '
     '"project_id": "p", "user_id": "u", "consumer_type": "bad"}, '
     '"%s": {"allocations": {}, "consumer_generation": null, '
     '"project_id": "", "user_id": "u", "consumer_type": "X"}}' % (UUID2, R)),
    ("reshaper_deep", "reshaper_1_38",
     '{"inventories": {"%s": {"resource_provider_generation": 1, '
     '"inventories": {"VCPU": {"total": 1, "step_size": 0}}}}, '
     '"allocations": {}}' % R),
    ("reshaper_missing", "reshaper_1_38", '{"inventories": {}}'),
    # Traits.
    ("rp_traits_ok", "rp_traits_put",
     '{"traits": ["CUSTOM_A"], "resource_provider_generation": 0}'),
    ("rp_traits_not_array", "rp_traits_put",
     '{"traits": "invalid_type", "resource_provider_generation": 0}'),
    ("rp_traits_bad_generation", "rp_traits_put",
     '{"traits": [], "resource_provider_generation": "invalid_generation"}'),
    ("rp_traits_missing_generation", "rp_traits_put", '{"traits": []}'),
    ("rp_traits_empty_name", "rp_traits_put",
     '{"traits": ["A", ""], "resource_provider_generation": 0}'),
    ("rp_traits_extra", "rp_traits_put",
     '{"traits": [], "resource_provider_generation": 0, "x": 1}'),
    ("traits_put_pattern", "traits_put", '{"traits": ["CUSTOM_OK", "bad"]}'),
    ("custom_trait_pattern", "custom_trait", '"FOO"'),
    ("custom_trait_trailing_newline", "custom_trait", '"CUSTOM_FOO\\n"'),
    # Aggregates.
    ("aggregates_dup", "aggregates_1_19",
     '{"aggregates": ["%s", "%s"], "resource_provider_generation": 1}'
     % (R, R)),
    ("aggregates_1_1_bad_uuid", "aggregates_1_1", '["%s", "x"]' % R),
    ("aggregates_1_1_object", "aggregates_1_1", '{"a": 1, "b": [2]}'),
    # Query strings.
    ("ac_bad_group_policy", "ac_get_1_36",
     '{"resources": "VCPU:1", "group_policy": "bogus"}'),
    ("ac_bad_suffix", "ac_get_1_25",
     '{"resources": "VCPU:1", "resources01": "VCPU:1"}'),
    ("ac_bad_suffix_1_33", "ac_get_1_33",
     '{"resources": "VCPU:1", "resources1@": "VCPU:1"}'),
    ("ac_two_bad_keys", "ac_get_1_33",
     '{"resources": "VCPU:1", "root_required": "X", "bogus": "1"}'),
    ("ac_limit_pattern", "ac_get_1_16", '{"resources": "VCPU:1", "limit": "0"}'),
    ("ac_limit_int", "ac_get_1_16", '{"resources": "VCPU:1", "limit": 0}'),
    ("ac_missing_resources", "ac_get_1_16", '{"limit": "1"}'),
    ("usages_bad_consumer_type", "usages_get_1_38",
     '{"project_id": "p", "consumer_type": "instance"}'),
    ("usages_all_consumer_type", "usages_get_1_38",
     '{"project_id": "p", "consumer_type": "all"}'),
    ("usages_empty_project", "usages_get_1_38", '{"project_id": ""}'),
    # Resource classes.
    ("rc_bad_name", "rc_post", '{"name": "FOO"}'),
    ("rc_long_name", "rc_post", '{"name": "CUSTOM_%s"}' % ("A" * 250)),
    # Generic keywords.
    ("type_int_string", "g_type_int", '"5"'),
    ("type_int_float", "g_type_int", "1.5"),
    ("type_int_integral_float", "g_type_int", "1.0"),
    ("type_int_exp_float", "g_type_int", "1e3"),
    ("type_int_bool", "g_type_int", "true"),
    ("type_int_inf", "g_type_int", "-1e400"),
    ("type_num_bool", "g_type_num", "false"),
    ("type_num_null", "g_type_num", "null"),
    ("type_str_list", "g_type_str", '[1, "a", null, true, 1.25]'),
    ("type_bool_int", "g_type_bool", "0"),
    ("type_null_empty_str", "g_type_null", '""'),
    ("type_obj_list", "g_type_obj", "[]"),
    ("type_arr_obj_order", "g_type_arr", '{"b": 1, "a": {"d": 2, "c": 3}}'),
    ("type_list", "g_type_list", '"x"'),
    ("type_list_ok", "g_type_list", "null"),
    ("enum_miss", "g_enum", '"b"'),
    ("enum_list", "g_enum", "[1, 2]"),
    ("enum_dict", "g_enum", '{"k": "v"}'),
    ("enum_float_one", "g_enum", "1.0"),
    ("enum_true_vs_one", "g_enum", "true"),
    ("enum_true_ok", "g_enum_true", "true"),
    ("enum_one_vs_true", "g_enum_true", "1"),
    ("enum_false_vs_zero", "g_enum_zero", "false"),
    ("const_miss", "g_const", '{"a": [1, 1]}'),
    ("const_ok", "g_const", '{"a": [1, true]}'),
    ("min_int", "g_min", "1"),
    ("min_float", "g_min", "-0.0001"),
    ("min_small_float", "g_min", "0.00001"),
    ("max_big", "g_max", "1e16"),
    ("max_float", "g_max", "12345.678"),
    ("max_string_ignored", "g_max", '"100"'),
    ("xmin_equal", "g_xmin", "0"),
    ("xmax_equal", "g_xmax", "2.5"),
    ("multiple_int", "g_multiple_int", "7"),
    ("multiple_int_float", "g_multiple_int", "7.5"),
    ("multiple_float", "g_multiple_float", "1.25"),
    ("multiple_float_ok", "g_multiple_float", "4"),
    ("len_short", "g_len", '"a"'),
    ("len_long_unicode", "g_len", '"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9"'),
    ("len_ok_astral", "g_len", '"\\ud83d\\ude00\\ud83d\\ude00"'),
    ("items_short", "g_items", "[]"),
    ("items_long", "g_items", "[1, 2, 3, 4]"),
    ("items_dup", "g_items", "[1, 1.0]"),
    ("items_bool_int_unique", "g_items", "[1, true]"),
    ("items_bad_item", "g_items", '[1, "x"]'),
    ("items_false", "g_items_false", "[1]"),
    ("props_false_schema", "g_props", '{"a": 1}'),
    ("props_additional_schema", "g_props", '{"b": 1, "c": 2}'),
    ("props_too_many", "g_props", '{"b": 1, "c": "2", "d": "3"}'),
    ("props_too_few", "g_props", "{}"),
    ("pattern_miss", "g_pattern", '"ab"'),
    ("pattern_newline", "g_pattern", '"aa\\n"'),
    ("pattern_search", "g_pattern_unanchored", '"abc1"'),
    ("pattern_search_miss", "g_pattern_unanchored", '"abc"'),
    ("format_bad", "g_format", '"%s"' % R[:-1]),
    ("format_braces", "g_format", '"{%s}"' % R),
    ("format_upper", "g_format", '"%s"' % R.upper()),
    ("format_extra_dashes", "g_format", '"%s-"' % R),
    ("format_urn", "g_format", '"urn:uuid:%s"' % R),
    ("body_format_no_dashes", "gb_format", '"%s"' % R.replace("-", "")),
    ("body_format_upper_braces", "gb_format", '"{%s}"' % R.upper()),
    ("body_format_bad", "gb_format", '"%s"' % R[:-1]),
    ("body_format_int", "gb_format", "5"),
    ("body_format_null", "gb_format", "null"),
    ("body_format_unicode_digit", "gb_format", '"%s\\u0661"' % R[:-1]),
    ("body_format_plus", "gb_format", '"+%s"' % R[1:]),
    ("body_rp_uuid_int", "rp_post", '{"name": "rp1", "uuid": 5}'),
    ("body_rp_parent_no_dashes", "rp_post_1_14",
     '{"name": "rp1", "parent_provider_uuid": "%s"}' % R.replace("-", "")),
    ("body_rp_parent_int", "rp_post_1_14",
     '{"name": "rp1", "parent_provider_uuid": 5}'),
    ("query_rps_in_tree_no_dashes", "rps_get_1_18",
     '{"in_tree": "%s"}' % R.replace("-", "")),
    ("anyof_int_low", "g_anyof", "3"),
    ("anyof_str_short", "g_anyof", '"ab"'),
    ("anyof_null", "g_anyof", "null"),
    ("oneof_several", "g_oneof", "5"),
    ("oneof_none", "g_oneof_none", "5"),
    ("allof_both", "g_allof", "1.5"),
    ("not_string", "g_not", '"x"'),
    ("false_schema", "g_false", "1"),
    ("nested_anyof_missing", "g_nested_anyof", '{"x": {}}'),
    ("nested_anyof_type", "g_nested_anyof", '{"x": 1}'),
    ("pp_extras", "g_pp_extras", '{"c": 1, "a": 1, "d": 2}'),
    ("order_first_keyword", "g_order", '{"a": 1, "b": 2}'),
    # Reprs of awkward values inside messages and pprint.
    ("repr_quotes", "g_type_int", '"it\'s"'),
    ("repr_both_quotes", "g_type_int", '"it\'s \\"x\\""'),
    ("repr_escapes", "g_type_int",
     '"tab\\there\\r\\n\\u0000\\u007f\\u0085\\u00a0\\u00e9\\u2028\\u200b'
     '\\ud83d\\ude00\\\\"'),
    ("repr_long_list", "g_type_obj", json.dumps(list(range(40)))),
    ("repr_long_nested", "g_type_arr", json.dumps({
        "zeta": {"alpha": ["x" * 30, "y" * 30, {"k": "v" * 50}],
                 "beta": None, "gamma": [True, False, 1.5e-7]},
        "alpha": "short",
        "long words": "lorem ipsum dolor sit amet " * 4,
        "lines": "first line\nsecond line that is quite a bit longer "
                 "than the first one\nthird",
    })),
    ("repr_long_string_top", "g_type_int", json.dumps(
        "lorem ipsum dolor sit amet, consectetur adipiscing elit " * 2)),
]


def go_quote(s):
    """A Go string literal for s: raw when readable, else interpreted."""
    if "`" not in s and "\r" not in s and all(
            c == "\n" or c == "\t" or (c.isprintable() and c != "\ufeff")
            for c in s):
        return "`" + s + "`"
    out = ['"']
    for c in s:
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        elif c.isprintable():
            out.append(c)
        elif ord(c) <= 0xFFFF:
            out.append("\\u%04x" % ord(c))
        else:
            out.append("\\U%08x" % ord(c))
    out.append('"')
    return "".join(out)


def go_path(p):
    items = []
    for e in p:
        items.append(str(e) if isinstance(e, int) else go_quote(e))
    return "[]any{" + ", ".join(items) + "}"


def run(schema, instance, body):
    checker = BODY_FORMAT_CHECKER if body else jsonschema.FormatChecker()
    try:
        jsonschema.validate(instance, schema, format_checker=checker)
    except jsonschema.ValidationError as exc:
        return exc
    return None


def main():
    w = sys.stdout.write
    w("// Code generated by testdata/gen_cases.py; DO NOT EDIT.\n\n")
    w("// Every expectation below was produced by running Python jsonschema\n")
    w("// %s (jsonschema.validate with FormatChecker, str() of the raised\n"
      % JSONSCHEMA_VERSION)
    w("// ValidationError) and CPython %d.%d repr/pprint on the same inputs.\n\n"
      % sys.version_info[:2])
    w("package schema\n\n")
    w("var pySchemas = map[string]string{\n")
    for name, s in SCHEMAS.items():
        w("\t%s: %s,\n" % (go_quote(name), go_quote(json.dumps(s))))
    w("}\n\n")
    w("// Schemas compiled with CompileBody (request bodies).\n")
    w("var pyBodySchemas = map[string]bool{\n")
    for name in SCHEMAS:
        if is_body(name):
            w("\t%s: true,\n" % go_quote(name))
    w("}\n\n")
    w("var pyCases = []pyCase{\n")
    for name, sname, inst_text in CASES:
        inst = json.loads(inst_text)
        err = run(SCHEMAS[sname], inst, is_body(sname))
        w("\t{\n")
        w("\t\tname: %s,\n" % go_quote(name))
        w("\t\tschema: %s,\n" % go_quote(sname))
        w("\t\tinstance: %s,\n" % go_quote(inst_text))
        if err is not None:
            w("\t\tmessage: %s,\n" % go_quote(err.message))
            w("\t\tkeyword: %s,\n" % go_quote(err.validator or ""))
            w("\t\tpath: %s,\n" % go_path(err.relative_path))
            w("\t\tschemaPath: %s,\n" % go_path(err.relative_schema_path))
            w("\t\twant: %s,\n" % go_quote(str(err)))
        w("\t},\n")
    w("}\n\n")

    # repr()/pprint of values, and the uuid format checker.
    w("var pyReprs = []reprCase{\n")
    values = [inst for _, _, inst in CASES] + [
        "0.1", "-0.0", "100.0", "1e22", "1.5e-7", "123456789012345678.0",
        "0.0001", "1e-5", "-1234.5e10", "2.5e-300", "[]", "{}", '""',
        '"\\u0001\\u001c\\u007f\\u00ad\\u0378\\ue000"',
        json.dumps([{"a": "x" * 60}, {"b": "y" * 30, "a": 1}]),
        json.dumps({"k": ["aaaa " * 20, "b" * 80]}),
        json.dumps(["a b " * 20]),
        json.dumps("one\r\ntwo\x0bthree\x0cfour\x1cfive\u2028six\x85"
                   "seven " * 3),
    ]
    seen = set()
    for text in values:
        if text in seen:
            continue
        seen.add(text)
        v = json.loads(text)
        w("\t{%s, %s, %s},\n" % (go_quote(text), go_quote(repr(v)),
                                 go_quote(pprint.pformat(v, width=72))))
    w("}\n\n")

    w("var pyUUIDs = []uuidCase{\n")
    uuids = [
        R, R.upper(), R.replace("-", ""), "{%s}" % R, "urn:uuid:%s" % R,
        R + "-", "-" + R, R[:-1], R[:-1] + "g", R[:-1] + "_",
        R[:8] + "-_" + R[9:], " " + R[1:], R[:-1] + " ", "+" + R[1:],
        R[:-2] + "__", "0x" + R[2:], "0x_" + R[3:],
        R[:-1] + "\u0661", R[:-1] + "\u00a0", "\u3000" + R[1:],
        R[:9] + "\uff10" + R[10:], "{{" + R + "}}", R + "uuid:",
        "%s-%s-%s-%s" % (R[:8], R[9:13], R[14:18], R[19:]),
        "", "x", R.upper().replace("-", ""), "uuid:" + R + "}", R + "\u0130",
    ]
    for u in uuids:
        ok = jsonschema.FormatChecker().conforms(u, "uuid")
        like = BODY_FORMAT_CHECKER.conforms(u, "uuid")
        w("\t{%s, %s, %s},\n" % (go_quote(u), "true" if ok else "false",
                                 "true" if like else "false"))
    w("}\n")


main()
