package admin

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"oauthd/keys"
)

// recorder is a Service that records which method was called, and with
// which arguments, and answers zero values. A method added to Service
// stops this file compiling until it is added here too (one line).
type recorder struct {
	name string
	args []any
}

func (r *recorder) rec(name string, args ...any) { r.name, r.args = name, args }

func (r *recorder) AddUser(_ context.Context, u NewUser) (UserView, error) {
	r.rec("AddUser", u)
	return UserView{}, nil
}
func (r *recorder) ListUsers(context.Context) ([]UserView, error) {
	r.rec("ListUsers")
	return nil, nil
}
func (r *recorder) ImportUsers(_ context.Context, us []ImportUser) ([]UserView, error) {
	r.rec("ImportUsers", us)
	return nil, nil
}
func (r *recorder) DisableUser(_ context.Context, ref string) (UserView, error) {
	r.rec("DisableUser", ref)
	return UserView{}, nil
}
func (r *recorder) EnableUser(_ context.Context, ref string) (UserView, error) {
	r.rec("EnableUser", ref)
	return UserView{}, nil
}
func (r *recorder) CreateClient(_ context.Context, c NewClient) (CreatedClient, error) {
	r.rec("CreateClient", c)
	return CreatedClient{}, nil
}
func (r *recorder) ImportClients(_ context.Context, cs []LegacyClient) ([]string, error) {
	r.rec("ImportClients", cs)
	return nil, nil
}
func (r *recorder) ListClients(_ context.Context, status string) ([]ClientView, error) {
	r.rec("ListClients", status)
	return nil, nil
}
func (r *recorder) ShowClient(_ context.Context, id string) (ClientView, error) {
	r.rec("ShowClient", id)
	return ClientView{}, nil
}
func (r *recorder) ApproveClient(_ context.Context, id string) (ClientView, error) {
	r.rec("ApproveClient", id)
	return ClientView{}, nil
}
func (r *recorder) ApproveRevision(_ context.Context, id, revision string) (ClientView, error) {
	r.rec("ApproveRevision", id, revision)
	return ClientView{}, nil
}
func (r *recorder) RejectClient(_ context.Context, id, reason string) (ClientView, error) {
	r.rec("RejectClient", id, reason)
	return ClientView{}, nil
}
func (r *recorder) RejectRevision(_ context.Context, id, reason, revision string) (ClientView, error) {
	r.rec("RejectRevision", id, reason, revision)
	return ClientView{}, nil
}
func (r *recorder) GenerateSecret(_ context.Context, id string) (CreatedSecret, error) {
	r.rec("GenerateSecret", id)
	return CreatedSecret{}, nil
}
func (r *recorder) ListSecrets(_ context.Context, id string) ([]SecretView, error) {
	r.rec("ListSecrets", id)
	return nil, nil
}
func (r *recorder) RevokeSecret(_ context.Context, id, secretID string) error {
	r.rec("RevokeSecret", id, secretID)
	return nil
}
func (r *recorder) SetScopes(_ context.Context, id string, scopes []string) (ClientView, error) {
	r.rec("SetScopes", id, scopes)
	return ClientView{}, nil
}
func (r *recorder) ForceScopes(_ context.Context, id string, scopes []string) (ClientView, error) {
	r.rec("ForceScopes", id, scopes)
	return ClientView{}, nil
}
func (r *recorder) SetRedirectURIs(_ context.Context, id string, uris []string) (ClientView, error) {
	r.rec("SetRedirectURIs", id, uris)
	return ClientView{}, nil
}
func (r *recorder) SetClientOptions(_ context.Context, id string, o ClientOptions) (ClientView, error) {
	r.rec("SetClientOptions", id, o)
	return ClientView{}, nil
}
func (r *recorder) EditClient(_ context.Context, id string, e ClientEdit) (EditResult, error) {
	r.rec("EditClient", id, e)
	return EditResult{}, nil
}
func (r *recorder) ListKeys(context.Context) ([]keys.Info, error) { r.rec("ListKeys"); return nil, nil }
func (r *recorder) RotateKeys(_ context.Context, alg string) (keys.RotateResult, error) {
	r.rec("RotateKeys", alg)
	return keys.RotateResult{}, nil
}
func (r *recorder) RevokeKey(_ context.Context, kid string) error {
	r.rec("RevokeKey", kid)
	return nil
}

func (r *recorder) ListUserApps(_ context.Context, user string) ([]AppView, error) {
	r.rec("ListUserApps", user)
	return nil, nil
}
func (r *recorder) RevokeUserApp(_ context.Context, user, clientID string) (RemovedApp, error) {
	r.rec("RevokeUserApp", user, clientID)
	return RemovedApp{}, nil
}
func (r *recorder) SetPostLogoutRedirectURIs(_ context.Context, id string, uris []string) (ClientView, error) {
	r.rec("SetPostLogoutRedirectURIs", id, uris)
	return ClientView{}, nil
}
func (r *recorder) AllowAgentHost(_ context.Context, host string, scopes []string) (AgentHostView, error) {
	r.rec("AllowAgentHost", host, scopes)
	return AgentHostView{}, nil
}
func (r *recorder) ListAgentHosts(context.Context) ([]AgentHostView, error) {
	r.rec("ListAgentHosts")
	return nil, nil
}
func (r *recorder) DenyAgentHost(_ context.Context, host string) (DeniedAgentHost, error) {
	r.rec("DenyAgentHost", host)
	return DeniedAgentHost{}, nil
}

var _ Service = (*recorder)(nil)

// sample is a distinct non-zero value of type t for argument i, so that a
// mixed-up or dropped argument shows (strings and string slices; other
// types get their zero value, which the operations must pass through
// too).
func sample(t reflect.Type, i int) reflect.Value {
	v := reflect.New(t).Elem()
	switch {
	case t.Kind() == reflect.String:
		v.SetString("arg" + string(rune('0'+i)))
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		v.Set(reflect.ValueOf([]string{"arg" + string(rune('0'+i))}).Convert(t))
	}
	return v
}

// TestEveryMethodIsAnOperation walks the Service interface: each method,
// called on the socket client with distinct arguments, must reach the
// same method of the server's Service with the same arguments. A method
// the socket client does not send, an entry missing from operations, or
// an operation that calls another method or drops an argument fails.
func TestEveryMethodIsAnOperation(t *testing.T) {
	rec := &recorder{}
	h := Handler(rec)
	var mu sync.Mutex
	hit := map[string]bool{}
	c := serveSocket(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hit[strings.TrimPrefix(r.URL.Path, "/v1/")] = true
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	st := reflect.TypeFor[Service]()
	if st.NumMethod() < 20 {
		t.Fatalf("Service has %d methods; want them all", st.NumMethod())
	}
	served := map[string]bool{}
	for m := range st.Methods() {
		t.Run(m.Name, func(t *testing.T) {
			*rec = recorder{}
			args := []reflect.Value{reflect.ValueOf(t.Context())}
			for i := 1; i < m.Type.NumIn(); i++ {
				args = append(args, sample(m.Type.In(i), i))
			}
			out := reflect.ValueOf(c).MethodByName(m.Name).Call(args)
			if err, _ := out[len(out)-1].Interface().(error); err != nil {
				t.Fatalf("SocketClient.%s: %v; add its entry to operations in http.go", m.Name, err)
			}
			if rec.name != m.Name {
				t.Fatalf("SocketClient.%s reached the server's %q; want %s (check the socket client's op name and the operations entry)", m.Name, rec.name, m.Name)
			}
			var want []any
			for _, a := range args[1:] {
				want = append(want, a.Interface())
			}
			if !reflect.DeepEqual(rec.args, want) {
				t.Fatalf("SocketClient.%s passed %#v to the server's method; want %#v", m.Name, rec.args, want)
			}
			served[m.Name] = true
		})
	}
	if len(served) != st.NumMethod() {
		t.Fatalf("%d of %d methods reach their operation", len(served), st.NumMethod())
	}
	// And no entry of operations is left that no method sends.
	for op := range operations {
		if !hit[op] {
			t.Errorf("operation %q is sent by no method of the socket client: remove it, or call it", op)
		}
	}
}
