package postgres

import (
	"reflect"
	"testing"
	"time"

	"oauthd/data"
)

// TestCloneFamily: the cached copy of a family is what the database would
// give back (decode of encode), shares no memory with the original, and
// every field of data.Family is covered: fill each with a non-zero value
// by reflection, so that a new field a clone would miss or alias fails.
func TestCloneFamily(t *testing.T) {
	var f data.Family
	v := reflect.ValueOf(&f).Elem()
	now := time.Now().In(time.FixedZone("X", 3600)) // with a monotonic reading
	for i := range v.NumField() {
		fv := v.Field(i)
		switch fv.Kind() {
		case reflect.String:
			fv.SetString("s" + v.Type().Field(i).Name)
		case reflect.Int64, reflect.Int:
			fv.SetInt(int64(i + 1))
		case reflect.Uint64:
			fv.SetUint(uint64(i + 1))
		case reflect.Bool:
			fv.SetBool(true)
		case reflect.Slice:
			switch fv.Type().Elem().Kind() {
			case reflect.Uint8:
				fv.SetBytes([]byte{byte(i), 2, 3})
			case reflect.String:
				fv.Set(reflect.ValueOf([]string{"A", "B"}))
			default:
				t.Fatalf("field %s: a slice of %s; teach cloneFamily and this test", v.Type().Field(i).Name, fv.Type().Elem())
			}
		case reflect.Struct:
			if fv.Type() != reflect.TypeOf(time.Time{}) {
				t.Fatalf("field %s of type %s; teach cloneFamily and this test", v.Type().Field(i).Name, fv.Type())
			}
			fv.Set(reflect.ValueOf(now.Add(time.Duration(i) * time.Second)))
		default:
			t.Fatalf("field %s of kind %s; teach cloneFamily and this test", v.Type().Field(i).Name, fv.Kind())
		}
	}
	want, err := decode[data.Family](encode(f))
	if err != nil {
		t.Fatal(err)
	}
	got := cloneFamily(f)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cloneFamily = %+v\nwant (decode of encode) %+v", got, want)
	}
	gv := reflect.ValueOf(got)
	for i := range v.NumField() {
		if v.Field(i).Kind() == reflect.Slice && gv.Field(i).Pointer() == v.Field(i).Pointer() {
			t.Errorf("field %s shares memory with the original", v.Type().Field(i).Name)
		}
	}
	// Empty optional hashes are nil after a round trip, as in the clone.
	f.CodeHash, f.PrevHash, f.LegacyHash = []byte{}, []byte{}, nil
	want, _ = decode[data.Family](encode(f))
	if got := cloneFamily(f); !reflect.DeepEqual(got, want) {
		t.Fatalf("empty hashes: cloneFamily = %+v\nwant %+v", got, want)
	}
}

// benchFamily is a family as a rotation stores it.
func benchFamily() data.Family {
	now := time.Now().UTC()
	return data.Family{ID: "fam_0123456789abcdefghijkl", ClientID: "oauthd_ci_0123456789abcdef", UserID: 42,
		Scopes: []string{"PROFILE_READ", "BOOKING_READ"}, TokenHash: make([]byte, 32), PrevHash: make([]byte, 32),
		Generation: 1234, CreatedAt: now, RotatedAt: now, ExpiresAt: now.Add(time.Hour), AbsoluteExp: now.Add(24 * time.Hour),
		CodeHash: make([]byte, 32), Tagged: true}
}

// What a rotation of a cached family costs to get its record: before, a
// JSON decode of the cached body; now, a copy of the decoded record.
func BenchmarkFamilyDecode(b *testing.B) {
	body := encode(benchFamily())
	for b.Loop() {
		if _, err := decode[data.Family](body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFamilyClone(b *testing.B) {
	f := benchFamily()
	for b.Loop() {
		cloneFamily(f)
	}
}
