package data

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestNormalize checks Normalize on every Record type, with values made by
// reflection, so that a field added to a record is checked without anyone
// listing it: a full value (every field set, every slice two elements,
// every pointer set, every time in another zone with a monotonic reading)
// and a hollow one (every slice empty but not nil). Normalize must
//   - put every time in UTC without a monotonic reading, the same instant;
//   - change nothing else but empty slices of omitempty fields (to nil);
//   - share no memory with its argument;
//   - be what a JSON round trip gives back (bolt and postgres store JSON);
//   - change nothing the second time.
func TestNormalize(t *testing.T) {
	for _, v := range []any{User{}, Client{}, AuthCode{}, Family{}, Grant{}, Session{}, SigningKey{}, []SigningKey{}, Revocation{}} {
		for _, hollow := range []bool{false, true} {
			name := fmt.Sprintf("%T/full", v)
			if hollow {
				name = fmt.Sprintf("%T/hollow", v)
			}
			t.Run(name, func(t *testing.T) {
				in := reflect.New(reflect.TypeOf(v)).Elem()
				fill(in, hollow, 1)
				got := normalizeAny(in.Interface())

				want := reflect.New(in.Type()).Elem()
				want.Set(in)
				want = deepCopy(want)
				expect(want, "")
				if !reflect.DeepEqual(got, want.Interface()) {
					t.Fatalf("Normalize(%+v)\n = %+v\nwant %+v", in, got, want)
				}
				if p := shared(in, reflect.ValueOf(got)); p != "" {
					t.Errorf("Normalize's result shares %s with its argument", p)
				}
				b, err := json.Marshal(got)
				if err != nil {
					t.Fatal(err)
				}
				back := reflect.New(in.Type())
				if err := json.Unmarshal(b, back.Interface()); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(back.Elem().Interface(), got) {
					t.Errorf("a JSON round trip of Normalize's result\n = %+v\nwant %+v", back.Elem().Interface(), got)
				}
				if again := normalizeAny(got); !reflect.DeepEqual(again, got) {
					t.Errorf("Normalize twice = %+v\nwant %+v", again, got)
				}
			})
		}
	}
}

func normalizeAny(v any) any {
	switch r := v.(type) {
	case User:
		return Normalize(r)
	case Client:
		return Normalize(r)
	case AuthCode:
		return Normalize(r)
	case Family:
		return Normalize(r)
	case Grant:
		return Normalize(r)
	case Session:
		return Normalize(r)
	case SigningKey:
		return Normalize(r)
	case []SigningKey:
		return Normalize(r)
	case Revocation:
		return Normalize(r)
	}
	panic(fmt.Sprintf("%T is not a Record", v))
}

var timeType = reflect.TypeFor[time.Time]()

// zone is not UTC; now has a monotonic reading.
var (
	zone = time.FixedZone("UTC-3", -3*3600)
	now  = time.Now()
)

// fill sets every field of v (settable), n numbering the values so that no
// two are alike: in full, every slice gets two elements; in hollow, every
// slice is empty but not nil.
func fill(v reflect.Value, hollow bool, n int) int {
	n++
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(now.Add(time.Duration(n) * time.Second).In(zone)))
			return n
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				n = fill(v.Field(i), hollow, n)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		n = fill(v.Elem(), hollow, n)
	case reflect.Slice:
		l := 2
		if hollow {
			l = 0
		}
		v.Set(reflect.MakeSlice(v.Type(), l, l))
		for i := range l {
			n = fill(v.Index(i), hollow, n)
		}
	case reflect.String:
		v.SetString(fmt.Sprint("s", n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(n))
	case reflect.Uint, reflect.Uint64, reflect.Uint32, reflect.Uint8:
		v.SetUint(uint64(n % 256))
	default:
		panic(fmt.Sprintf("fill: teach this test the kind %s", v.Kind()))
	}
	return n
}

// deepCopy returns a copy of v sharing no slice or pointer with it.
func deepCopy(v reflect.Value) reflect.Value {
	out := reflect.New(v.Type()).Elem()
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == timeType {
			out.Set(v)
			break
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			out.Set(reflect.New(v.Type().Elem()))
			out.Elem().Set(deepCopy(v.Elem()))
		}
	case reflect.Slice:
		if !v.IsNil() {
			out.Set(reflect.MakeSlice(v.Type(), v.Len(), v.Len()))
			for i := range v.Len() {
				out.Index(i).Set(deepCopy(v.Index(i)))
			}
		}
	default:
		out.Set(v)
	}
	return out
}

// expect turns v, a copy of Normalize's argument, into what Normalize
// returns: times in UTC, empty omitempty slices nil (tag is the JSON tag
// of the field v is).
func expect(v reflect.Value, tag string) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(v.Interface().(time.Time).UTC()))
			return
		}
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				expect(v.Field(i), f.Tag.Get("json"))
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			expect(v.Elem(), "")
		}
	case reflect.Slice:
		if v.Len() == 0 && hasOption(tag, "omitempty") {
			v.Set(reflect.Zero(v.Type()))
		}
		for i := range v.Len() {
			expect(v.Index(i), "")
		}
	}
}

func hasOption(tag, option string) bool {
	return slices.Contains(strings.Split(tag, ",")[1:], option)
}

// shared returns the path of a slice or pointer of b that shares memory
// with one of a, or "".
func shared(a, b reflect.Value) string {
	seen := map[uintptr]bool{}
	var walk func(v reflect.Value, path string, f func(v reflect.Value, path string) bool) bool
	walk = func(v reflect.Value, path string, f func(v reflect.Value, path string) bool) bool {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type() != timeType && v.Type().Field(i).IsExported() && walk(v.Field(i), path+"."+v.Type().Field(i).Name, f) {
					return true
				}
			}
		case reflect.Pointer:
			if !v.IsNil() {
				return f(v, path) || walk(v.Elem(), path, f)
			}
		case reflect.Slice:
			if v.Cap() > 0 && f(v, path) {
				return true
			}
			for i := range v.Len() {
				if walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i), f) {
					return true
				}
			}
		}
		return false
	}
	walk(a, "", func(v reflect.Value, _ string) bool { seen[v.Pointer()] = true; return false })
	var found string
	walk(b, b.Type().Name(), func(v reflect.Value, path string) bool {
		if seen[v.Pointer()] {
			found = path
			return true
		}
		return false
	})
	return found
}
