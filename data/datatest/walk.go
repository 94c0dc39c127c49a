package datatest

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"time"
)

// The suite reaches every field of a record by reflection, so that a field
// added to a stored type is tested without anyone remembering to.

var timeType = reflect.TypeFor[time.Time]()

// eachTime calls f for every time.Time reachable from v (struct fields,
// pointers, slices, arrays, maps, interfaces), with its path from v
// ("Pending.Secret.CreatedAt", "Secrets[0].LastUsedAt"), and stores what
// f returns in its place. v must be addressable; a map entry is walked on
// a copy and stored back.
func eachTime(v reflect.Value, path string, f func(path string, t time.Time) time.Time) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(f(path, v.Interface().(time.Time))))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				eachTime(v.Field(i), join(path, v.Type().Field(i).Name), f)
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			eachTime(v.Elem(), path, f)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			eachTime(v.Index(i), fmt.Sprintf("%s[%d]", path, i), f)
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int {
			return cmp.Compare(fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface()))
		})
		for _, k := range keys {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			eachTime(e, fmt.Sprintf("%s[%v]", path, k.Interface()), f)
			v.SetMapIndex(k, e)
		}
	case reflect.Interface:
		if !v.IsNil() {
			e := reflect.New(v.Elem().Type()).Elem()
			e.Set(v.Elem())
			eachTime(e, path, f)
			v.Set(e)
		}
	}
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// timesOf returns every time.Time reachable from the record v, by path.
func timesOf(v any) map[string]time.Time {
	out := map[string]time.Time{}
	rv := reflect.New(reflect.TypeOf(v)).Elem()
	rv.Set(reflect.ValueOf(v))
	eachTime(rv, reflect.TypeOf(v).Name(), func(path string, t time.Time) time.Time {
		out[path] = t
		return t
	})
	return out
}

// uncovered lists, as "Type.Field", every field of every struct type
// reachable from the types of records that is zero (false, "", 0, nil, an
// empty slice or map) in every value of that type reachable from records.
// Fixtures for which it returns nothing exercise every field, so a
// round trip of them tests every field, including the next one added.
func uncovered(records ...any) []string {
	types := map[reflect.Type]bool{}
	var reach func(t reflect.Type)
	reach = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Struct:
			if t == timeType || types[t] {
				return
			}
			types[t] = true
			for i := range t.NumField() {
				if t.Field(i).IsExported() {
					reach(t.Field(i).Type)
				}
			}
		case reflect.Pointer, reflect.Slice, reflect.Array:
			reach(t.Elem())
		case reflect.Map:
			reach(t.Key())
			reach(t.Elem())
		}
	}
	covered := map[reflect.Type]map[string]bool{}
	var visit func(v reflect.Value)
	visit = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			if v.Type() == timeType {
				return
			}
			if covered[v.Type()] == nil {
				covered[v.Type()] = map[string]bool{}
			}
			for i := range v.NumField() {
				f := v.Type().Field(i)
				if !f.IsExported() {
					continue
				}
				if !isEmpty(v.Field(i)) {
					covered[v.Type()][f.Name] = true
				}
				visit(v.Field(i))
			}
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				visit(v.Elem())
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				visit(v.Index(i))
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				visit(k)
				visit(v.MapIndex(k))
			}
		}
	}
	for _, r := range records {
		reach(reflect.TypeOf(r))
		visit(reflect.ValueOf(r))
	}
	var out []string
	for t := range types {
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && !covered[t][f.Name] {
				out = append(out, t.Name()+"."+f.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// isEmpty reports whether v is the zero value, or an empty slice or map.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	}
	return v.IsZero()
}
