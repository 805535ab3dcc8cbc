// Command gitops-check tells how the GitOps tools judge objects: it reads one JSON document on
// stdin,
//
//	{"objects": [<Kubernetes object>...],
//	 "healthCheckExprs": [{"apiVersion", "kind", "current", "inProgress", "failed"}...],
//	 "luaHealth": {"<group>_<Kind>": "<Lua script>"...}}
//
// and prints one JSON document on stdout, one result per object, in order:
//
//	{"results": [{"kstatus": {"status", "message"},
//	              "flux": {"status"} | {"error"} | null,
//	              "argo": {"status", "message"} | {"error"} | null}...]}
//
// Each verdict is computed the way the tool computes it, with the tool's own library:
//   - kstatus: sigs.k8s.io/cli-utils/pkg/kstatus/status.Compute, what Flux (without
//     healthCheckExprs), kpt and `kubectl wait`-style pollers use.
//   - flux: fluxcd/pkg/runtime/cel StatusEvaluator.Evaluate (the kustomize-controller's
//     healthCheckExprs): the same cel-go environment and program options, the expression only
//     parsed (not type-checked), evaluated with the object's top-level fields (apiVersion, kind,
//     metadata, spec, status) as variables; an observedGeneration behind metadata.generation is
//     InProgress before any expression; then inProgress, failed, current in that order, none
//     true is InProgress. The entry is picked by group and kind (a kind-less entry matches a
//     whole group), as Flux's StatusReader does.
//   - argo: argo-cd util/lua VM.ExecuteHealthLua: a gopher-lua state without the standard
//     libraries, then package, base and table opened (Argo's safe os library, time and date only,
//     is left out: our scripts do not use it, so a script that did would fail here first), the
//     object as the global `obj` (decoded as Argo's decodeValue does), a one-second timeout, the
//     returned table read as {status, message}; a status outside Argo's health codes is Unknown.
//     The script is the one of the argocd-cm key resource.customizations.health.<group>_<Kind>.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type healthCheckExpr struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Current    string `json:"current"`
	InProgress string `json:"inProgress"`
	Failed     string `json:"failed"`
}

type input struct {
	Objects          []json.RawMessage `json:"objects"`
	HealthCheckExprs []healthCheckExpr `json:"healthCheckExprs"`
	LuaHealth        map[string]string `json:"luaHealth"`
}

type verdict struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

type result struct {
	Kstatus *verdict `json:"kstatus"`
	Flux    *verdict `json:"flux"`
	Argo    *verdict `json:"argo"`
}

func main() {
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("read stdin: %v", err)
	}
	var in input
	if err := json.Unmarshal(raw, &in); err != nil {
		fail("parse stdin: %v", err)
	}
	evaluators, err := fluxEvaluators(in.HealthCheckExprs)
	if err != nil {
		fail("healthCheckExprs: %v", err)
	}
	results := make([]result, 0, len(in.Objects))
	for i, object := range in.Objects {
		// UnmarshalJSON converts numbers as the API machinery does (int64 for integers), which
		// status.Compute and Flux's NestedInt64 rely on.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(object); err != nil {
			fail("objects[%d]: %v", i, err)
		}
		results = append(results, result{
			Kstatus: kstatusVerdict(u),
			Flux:    fluxVerdict(evaluators, u),
			Argo:    argoVerdict(in.LuaHealth, u),
		})
	}
	out, _ := json.Marshal(map[string]any{"results": results})
	fmt.Println(string(out))
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gitops-check: "+format+"\n", args...)
	os.Exit(1)
}

func kstatusVerdict(u *unstructured.Unstructured) *verdict {
	res, err := status.Compute(u)
	if err != nil {
		return &verdict{Error: err.Error()}
	}
	return &verdict{Status: res.Status.String(), Message: res.Message}
}

// --- Flux: fluxcd/pkg/runtime/cel (expression.go, status_evaluator.go, status_reader.go) ---

type fluxEvaluator struct{ inProgress, failed, current cel.Program }

func newExpression(expr string) (cel.Program, error) {
	env, err := cel.NewEnv(
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
	)
	if err != nil {
		return nil, err
	}
	// Parsed, not compiled: Flux cannot declare the variables, since not every CRD has the five
	// usual top-level fields.
	ast, issues := env.Parse(expr)
	if issues != nil {
		return nil, fmt.Errorf("failed to parse the CEL expression '%s': %s", expr, issues.String())
	}
	return env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.InterruptCheckFrequency(100))
}

func fluxEvaluators(exprs []healthCheckExpr) (map[schema.GroupKind]*fluxEvaluator, error) {
	evaluators := map[schema.GroupKind]*fluxEvaluator{}
	for i, hc := range exprs {
		gk := schema.FromAPIVersionAndKind(hc.APIVersion, hc.Kind).GroupKind()
		if hc.Kind == "" {
			gk = schema.GroupKind{Group: gk.Group}
		}
		if _, ok := evaluators[gk]; ok {
			return nil, fmt.Errorf("duplicate custom health check for GroupKind %s at healthchecks[%d]", gk, i)
		}
		if hc.Current == "" {
			return nil, fmt.Errorf("healthchecks[%d]: expression Current not specified", i)
		}
		e := &fluxEvaluator{}
		for _, p := range []struct {
			expr string
			into *cel.Program
		}{{hc.Current, &e.current}, {hc.Failed, &e.failed}, {hc.InProgress, &e.inProgress}} {
			if p.expr == "" {
				continue
			}
			prog, err := newExpression(p.expr)
			if err != nil {
				return nil, fmt.Errorf("healthchecks[%d]: %w", i, err)
			}
			*p.into = prog
		}
		evaluators[gk] = e
	}
	return evaluators, nil
}

func fluxVerdict(evaluators map[schema.GroupKind]*fluxEvaluator, u *unstructured.Unstructured) *verdict {
	gk := u.GroupVersionKind().GroupKind()
	e, ok := evaluators[gk]
	if !ok {
		e, ok = evaluators[schema.GroupKind{Group: gk.Group}]
	}
	if !ok {
		return nil
	}
	obj := u.UnstructuredContent()
	if observed, ok, err := unstructured.NestedInt64(obj, "status", "observedGeneration"); err == nil && ok {
		if generation, ok, err := unstructured.NestedInt64(obj, "metadata", "generation"); err == nil && ok && observed != generation {
			return &verdict{Status: status.InProgressStatus.String()}
		}
	}
	for _, step := range []struct {
		prog   cel.Program
		status status.Status
	}{{e.inProgress, status.InProgressStatus}, {e.failed, status.FailedStatus}, {e.current, status.CurrentStatus}} {
		if step.prog == nil {
			continue
		}
		val, _, err := step.prog.ContextEval(context.Background(), obj)
		if err != nil {
			return &verdict{Error: fmt.Sprintf("failed to evaluate the CEL expression: %v", err)}
		}
		b, ok := val.(types.Bool)
		if !ok {
			return &verdict{Error: "failed to evaluate CEL expression as boolean"}
		}
		if b {
			return &verdict{Status: step.status.String()}
		}
	}
	return &verdict{Status: status.InProgressStatus.String()}
}

// --- Argo CD: util/lua/lua.go (runLua, ExecuteHealthLua, decodeValue) ---

var argoHealthCodes = map[string]bool{
	"Unknown": true, "Progressing": true, "Suspended": true, "Healthy": true, "Degraded": true, "Missing": true,
}

func argoVerdict(scripts map[string]string, u *unstructured.Unstructured) *verdict {
	gk := u.GroupVersionKind().GroupKind()
	script, ok := scripts[strings.ReplaceAll(gk.Group, "/", "_")+"_"+gk.Kind]
	if !ok {
		return nil
	}
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return &verdict{Error: err.Error()}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", decodeValue(l, u.Object))
	fn, err := l.LoadString(script)
	if err == nil {
		l.Push(fn)
		err = l.PCall(0, lua.MultRet, nil)
	}
	if err != nil {
		return &verdict{Error: err.Error()}
	}
	ret := l.Get(-1)
	if ret.Type() == lua.LTNil {
		return &verdict{}
	}
	table, ok := ret.(*lua.LTable)
	if !ok {
		return &verdict{Error: "expect table output from Lua script, not " + ret.Type().String()}
	}
	code := lua.LVAsString(table.RawGetString("status"))
	message := lua.LVAsString(table.RawGetString("message"))
	if !argoHealthCodes[code] {
		return &verdict{Status: "Unknown", Message: "Lua returned an invalid health status"}
	}
	return &verdict{Status: code, Message: message}
}

func decodeValue(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case json.Number:
		return lua.LString(v)
	case int:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case []any:
		arr := l.CreateTable(len(v), 0)
		for _, item := range v {
			arr.Append(decodeValue(l, item))
		}
		return arr
	case map[string]any:
		tbl := l.CreateTable(0, len(v))
		for key, item := range v {
			tbl.RawSetH(lua.LString(key), decodeValue(l, item))
		}
		return tbl
	}
	return lua.LNil
}
