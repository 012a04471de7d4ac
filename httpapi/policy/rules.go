package policy

import "sort"

// Names of the base rules. Handlers do not check them directly; the
// placement:* rules refer to them with "rule:<name>", and a policy file may
// override them to change many placement:* rules at once.
const (
	AdminAPI                         = "admin_api"
	ServiceAPI                       = "service_api"
	AdminOrServiceAPI                = "admin_or_service_api"
	ProjectReaderAPI                 = "project_reader_api"
	AdminOrProjectReaderOrServiceAPI = "admin_or_project_reader_or_service_api"
)

// Names of the rules the API handlers check, one constant per upstream
// policy (placement/policies/*.py). The comment names the request(s) whose
// handler checks it.
const (
	ResourceProvidersList   = "placement:resource_providers:list"   // GET /resource_providers
	ResourceProvidersCreate = "placement:resource_providers:create" // POST /resource_providers
	ResourceProvidersShow   = "placement:resource_providers:show"   // GET /resource_providers/{uuid}
	ResourceProvidersUpdate = "placement:resource_providers:update" // PUT /resource_providers/{uuid}
	ResourceProvidersDelete = "placement:resource_providers:delete" // DELETE /resource_providers/{uuid}

	ResourceClassesList   = "placement:resource_classes:list"   // GET /resource_classes
	ResourceClassesCreate = "placement:resource_classes:create" // POST /resource_classes
	ResourceClassesShow   = "placement:resource_classes:show"   // GET /resource_classes/{name}
	ResourceClassesUpdate = "placement:resource_classes:update" // PUT /resource_classes/{name} (both 1.2-1.6 and 1.7+ handlers)
	ResourceClassesDelete = "placement:resource_classes:delete" // DELETE /resource_classes/{name}

	InventoriesList   = "placement:resource_providers:inventories:list"   // GET /resource_providers/{uuid}/inventories
	InventoriesCreate = "placement:resource_providers:inventories:create" // POST /resource_providers/{uuid}/inventories
	InventoriesShow   = "placement:resource_providers:inventories:show"   // GET /resource_providers/{uuid}/inventories/{rc}
	InventoriesUpdate = "placement:resource_providers:inventories:update" // PUT .../inventories and PUT .../inventories/{rc}
	InventoriesDelete = "placement:resource_providers:inventories:delete" // DELETE .../inventories and DELETE .../inventories/{rc}

	AggregatesList   = "placement:resource_providers:aggregates:list"   // GET /resource_providers/{uuid}/aggregates
	AggregatesUpdate = "placement:resource_providers:aggregates:update" // PUT /resource_providers/{uuid}/aggregates

	ProviderUsages = "placement:resource_providers:usages" // GET /resource_providers/{uuid}/usages
	TotalUsages    = "placement:usages"                    // GET /usages (target: {"project_id": query project_id})

	TraitsList   = "placement:traits:list"   // GET /traits
	TraitsShow   = "placement:traits:show"   // GET /traits/{name}
	TraitsUpdate = "placement:traits:update" // PUT /traits/{name}
	TraitsDelete = "placement:traits:delete" // DELETE /traits/{name}

	ProviderTraitsList   = "placement:resource_providers:traits:list"   // GET /resource_providers/{uuid}/traits
	ProviderTraitsUpdate = "placement:resource_providers:traits:update" // PUT /resource_providers/{uuid}/traits
	ProviderTraitsDelete = "placement:resource_providers:traits:delete" // DELETE /resource_providers/{uuid}/traits

	AllocationsManage       = "placement:allocations:manage"                  // POST /allocations
	AllocationsList         = "placement:allocations:list"                    // GET /allocations/{consumer_uuid}
	AllocationsUpdate       = "placement:allocations:update"                  // PUT /allocations/{consumer_uuid}
	AllocationsDelete       = "placement:allocations:delete"                  // DELETE /allocations/{consumer_uuid}
	ProviderAllocationsList = "placement:resource_providers:allocations:list" // GET /resource_providers/{uuid}/allocations

	AllocationCandidatesList = "placement:allocation_candidates:list" // GET /allocation_candidates

	Reshape = "placement:reshaper:reshape" // POST /reshaper
)

// Operation is one API request a rule protects (documentation only).
type Operation struct {
	Method string
	Path   string
}

// ruleDefault is one registered rule, as upstream's RuleDefault /
// DocumentedRuleDefault: its default check string, the deprecated rule
// whose check string is OR-ed in when enforce_new_defaults is false, and
// the token scopes it accepts (nil: any scope; the check is skipped).
type ruleDefault struct {
	name        string
	check       string
	deprecated  *deprecatedRule
	scopeTypes  []string
	description string
	operations  []Operation
}

type deprecatedRule struct {
	name  string
	check string
}

// deprecatedAdmin is upstream's DEPRECATED_ADMIN_POLICY. Its name really is
// "rule:admin_api" (placement/policies/base.py), so a policy file key
// "rule:admin_api" is how an operator overrides it.
var deprecatedAdmin = &deprecatedRule{name: "rule:admin_api", check: "role:admin"}

const (
	ruleAdminOrService                = "rule:" + AdminOrServiceAPI
	ruleService                       = "rule:" + ServiceAPI
	ruleAdminOrProjectReaderOrService = "rule:" + AdminOrProjectReaderOrServiceAPI
)

var projectScope = []string{"project"}

// defaults lists every rule upstream Placement registers, in upstream's
// registration order (placement/policies/__init__.py).
var defaults = []ruleDefault{
	// base.py
	{name: AdminAPI, check: "role:admin", scopeTypes: projectScope,
		description: "Default rule for most placement APIs."},
	{name: ServiceAPI, check: "role:service", deprecated: deprecatedAdmin, scopeTypes: projectScope,
		description: "Default rule for service-to-service placement APIs."},
	{name: AdminOrServiceAPI, check: "role:admin or role:service", deprecated: deprecatedAdmin, scopeTypes: projectScope,
		description: "Default rule for most placement APIs."},
	// No scope_types upstream: never refused for its scope.
	{name: ProjectReaderAPI, check: "role:reader and project_id:%(project_id)s", deprecated: deprecatedAdmin,
		description: "Default rule for Project level reader APIs."},
	{name: AdminOrProjectReaderOrServiceAPI, check: "role:admin or rule:project_reader_api or role:service",
		deprecated: deprecatedAdmin, scopeTypes: projectScope,
		description: "Default rule for project level reader APIs."},

	// resource_provider.py
	doc(ResourceProvidersList, ruleAdminOrService, "List resource providers.", "GET /resource_providers"),
	doc(ResourceProvidersCreate, ruleAdminOrService, "Create resource provider.", "POST /resource_providers"),
	doc(ResourceProvidersShow, ruleAdminOrService, "Show resource provider.", "GET /resource_providers/{uuid}"),
	doc(ResourceProvidersUpdate, ruleAdminOrService, "Update resource provider.", "PUT /resource_providers/{uuid}"),
	doc(ResourceProvidersDelete, ruleAdminOrService, "Delete resource provider.", "DELETE /resource_providers/{uuid}"),

	// resource_class.py
	doc(ResourceClassesList, ruleAdminOrService, "List resource classes.", "GET /resource_classes"),
	doc(ResourceClassesCreate, ruleAdminOrService, "Create resource class.", "POST /resource_classes"),
	doc(ResourceClassesShow, ruleAdminOrService, "Show resource class.", "GET /resource_classes/{name}"),
	doc(ResourceClassesUpdate, ruleAdminOrService, "Update resource class.", "PUT /resource_classes/{name}"),
	doc(ResourceClassesDelete, ruleAdminOrService, "Delete resource class.", "DELETE /resource_classes/{name}"),

	// inventory.py
	doc(InventoriesList, ruleAdminOrService, "List resource provider inventories.",
		"GET /resource_providers/{uuid}/inventories"),
	doc(InventoriesCreate, ruleAdminOrService, "Create one resource provider inventory.",
		"POST /resource_providers/{uuid}/inventories"),
	doc(InventoriesShow, ruleAdminOrService, "Show resource provider inventory.",
		"GET /resource_providers/{uuid}/inventories/{resource_class}"),
	doc(InventoriesUpdate, ruleAdminOrService, "Update resource provider inventory.",
		"PUT /resource_providers/{uuid}/inventories",
		"PUT /resource_providers/{uuid}/inventories/{resource_class}"),
	doc(InventoriesDelete, ruleAdminOrService, "Delete resource provider inventory.",
		"DELETE /resource_providers/{uuid}/inventories",
		"DELETE /resource_providers/{uuid}/inventories/{resource_class}"),

	// aggregate.py
	doc(AggregatesList, ruleAdminOrService, "List resource provider aggregates.",
		"GET /resource_providers/{uuid}/aggregates"),
	doc(AggregatesUpdate, ruleAdminOrService, "Update resource provider aggregates.",
		"PUT /resource_providers/{uuid}/aggregates"),

	// usage.py
	doc(ProviderUsages, ruleAdminOrService, "List resource provider usages.",
		"GET /resource_providers/{uuid}/usages"),
	doc(TotalUsages, ruleAdminOrProjectReaderOrService, "List total resource usages for a given project.",
		"GET /usages"),

	// trait.py
	doc(TraitsList, ruleAdminOrService, "List traits.", "GET /traits"),
	doc(TraitsShow, ruleAdminOrService, "Show trait.", "GET /traits/{name}"),
	doc(TraitsUpdate, ruleAdminOrService, "Update trait.", "PUT /traits/{name}"),
	doc(TraitsDelete, ruleAdminOrService, "Delete trait.", "DELETE /traits/{name}"),
	doc(ProviderTraitsList, ruleAdminOrService, "List resource provider traits.",
		"GET /resource_providers/{uuid}/traits"),
	doc(ProviderTraitsUpdate, ruleAdminOrService, "Update resource provider traits.",
		"PUT /resource_providers/{uuid}/traits"),
	doc(ProviderTraitsDelete, ruleAdminOrService, "Delete resource provider traits.",
		"DELETE /resource_providers/{uuid}/traits"),

	// allocation.py
	doc(AllocationsManage, ruleAdminOrService, "Manage allocations.", "POST /allocations"),
	doc(AllocationsList, ruleAdminOrService, "List allocations.", "GET /allocations/{consumer_uuid}"),
	doc(AllocationsUpdate, ruleAdminOrService, "Update allocations.", "PUT /allocations/{consumer_uuid}"),
	doc(AllocationsDelete, ruleAdminOrService, "Delete allocations.", "DELETE /allocations/{consumer_uuid}"),
	doc(ProviderAllocationsList, ruleAdminOrService, "List resource provider allocations.",
		"GET /resource_providers/{uuid}/allocations"),

	// allocation_candidate.py
	doc(AllocationCandidatesList, ruleAdminOrService, "List allocation candidates.", "GET /allocation_candidates"),

	// reshaper.py
	doc(Reshape, ruleService, "Reshape Inventory and Allocations.", "POST /reshaper"),
}

// doc builds a project-scoped DocumentedRuleDefault without deprecated rule,
// which is what every placement:* rule is upstream. ops are "METHOD /path".
func doc(name, check, description string, ops ...string) ruleDefault {
	r := ruleDefault{name: name, check: check, scopeTypes: projectScope, description: description}
	for _, op := range ops {
		for i := 0; i < len(op); i++ {
			if op[i] == ' ' {
				r.operations = append(r.operations, Operation{Method: op[:i], Path: op[i+1:]})
				break
			}
		}
	}
	return r
}

var defaultsByName = func() map[string]*ruleDefault {
	m := make(map[string]*ruleDefault, len(defaults))
	for i := range defaults {
		if _, dup := m[defaults[i].name]; dup {
			panic("policy: duplicate rule " + defaults[i].name)
		}
		m[defaults[i].name] = &defaults[i]
	}
	return m
}()

// RuleNames returns the name of every registered rule, sorted.
func RuleNames() []string {
	names := make([]string, 0, len(defaults))
	for _, r := range defaults {
		names = append(names, r.name)
	}
	sort.Strings(names)
	return names
}

// RuleInfo describes a registered rule's defaults, for documentation and
// sample-file generation.
type RuleInfo struct {
	Name string
	// Check is the new default check string.
	Check string
	// DeprecatedName and DeprecatedCheck are set when the rule has a
	// deprecated rule, OR-ed with Check unless enforce_new_defaults.
	DeprecatedName, DeprecatedCheck string
	// ScopeTypes are the token scopes accepted; nil means any.
	ScopeTypes  []string
	Description string
	Operations  []Operation
}

// Rules describes every registered rule, in upstream's registration order.
func Rules() []RuleInfo {
	out := make([]RuleInfo, 0, len(defaults))
	for _, r := range defaults {
		info := RuleInfo{
			Name:        r.name,
			Check:       r.check,
			ScopeTypes:  append([]string(nil), r.scopeTypes...),
			Description: r.description,
			Operations:  append([]Operation(nil), r.operations...),
		}
		if r.deprecated != nil {
			info.DeprecatedName, info.DeprecatedCheck = r.deprecated.name, r.deprecated.check
		}
		out = append(out, info)
	}
	return out
}
