// Package policy is placementd's authorization (RBAC) layer: upstream
// Placement's policy rules and an enforcer with oslo.policy's semantics.
//
// It owns:
//
//   - the registered rules (rules.go): every rule upstream Placement
//     registers in placement/policies/*.py, with its default check string,
//     deprecated rule, scope_types and the requests it protects. Handlers
//     refer to them through the exported name constants and call
//     Enforcer.Authorize once, before doing anything else, the way upstream
//     handlers call context.can;
//   - the policy language (parse.go, check.go): oslo.policy's check strings
//     ("role:admin", "rule:name", "project_id:%(project_id)s",
//     "'literal':%(field)s", "@", "!", "not", "and", "or", parentheses),
//     with oslo.policy's precedence and tokenization, and the old JSON
//     list-of-lists form;
//   - policy files (file.go): YAML or JSON mapping rule names to check
//     strings; each rule named replaces that rule, the others keep their
//     defaults; policy_dirs' files are read after policy_file, in name
//     order;
//   - enforcement (enforcer.go): [oslo_policy] enforce_new_defaults (false
//     ORs a rule with its deprecated rule unless the file overrides it) and
//     enforce_scope (a token whose scope is not in the rule's scope_types is
//     refused before the rule is evaluated), and the 403 detail text of
//     upstream's PolicyNotAuthorized.
//
// It does not own authentication or building Credentials from a request
// (noauth2 and oslo.context header handling belong to the HTTP layer), nor
// turning *Forbidden into a 403 response.
//
// Deliberate differences from oslo.policy: a policy file that cannot be
// read or parsed, a check string with a syntax error, and a cycle of
// rule:... references are errors from New (the server refuses to start);
// oslo.policy logs such a check string and makes its rule refuse everyone,
// quietly ignores a missing policy file, and loops on a cycle. Remote
// (http:/https:) checks are not supported. The policy file is read once at
// start-up, not re-read when it changes.
//
// It imports nothing of placementd (YAML only) and must not: the HTTP
// layer builds Credentials and maps errors to statuses.
package policy
