package data

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestUserCodes(t *testing.T) {
	for range 200 {
		c := NewUserCode()
		if len(c) != UserCodeLen || CanonicalUserCode(c) != c || strings.Trim(c, UserCodeAlphabet) != "" {
			t.Fatalf("NewUserCode = %q", c)
		}
	}
	for typed, want := range map[string]string{
		"BCDF-GHJK": "BCDFGHJK", "bcdf ghjk": "BCDFGHJK", " bcdfghjk\t": "BCDFGHJK", "BcDf-GhJk": "BCDFGHJK",
		"BCDF-GHJA": "", "BCDF-GHJ": "", "BCDF-GHJKL": "", "ＢCDF-GHJK": "", "BCDF_GHJK": "", strings.Repeat("-", 70) + "BCDFGHJK": "",
		"BCDF-GHJK" + strings.Repeat(" ", MaxTypedUserCode-9): "BCDFGHJK", "BCDF-GHJK" + strings.Repeat(" ", MaxTypedUserCode-8): "",
	} {
		if got := CanonicalUserCode(typed); got != want {
			t.Errorf("CanonicalUserCode(%q) = %q; want %q", typed, got, want)
		}
	}
	if ShowUserCode("BCDFGHJK") != "BCDF-GHJK" {
		t.Errorf("ShowUserCode = %q", ShowUserCode("BCDFGHJK"))
	}
	now := time.UnixMilli(1_770_000_000_123)
	dc := NewDeviceCode("BCDFGHJK", now)
	if DeviceCodeUser(dc) != "BCDFGHJK" || DeviceCodeUser("oauthd_dc_x") != "" || DeviceCodeUser(PrefixAuthCode+dc[10:]) != "" {
		t.Errorf("DeviceCodeUser(%q) = %q", dc, DeviceCodeUser(dc))
	}
	if got, ok := DeviceCodeTime(dc); !ok || !got.Equal(now) {
		t.Errorf("DeviceCodeTime = %v, %v; want %v", got, ok, now)
	}
	if _, ok := DeviceCodeTime(dc + "x"); ok {
		t.Error("DeviceCodeTime accepted a longer code")
	}
	if string(DeviceCodeKey(dc)) == string(DeviceCodeKey(NewDeviceCode("BCDFGHJK", now))) {
		t.Error("two device codes share a key")
	}
}

func TestValidateDeviceCode(t *testing.T) {
	ok := DeviceCode{UserCode: "BCDFGHJK", Hash: DeviceCodeKey(NewDeviceCode("BCDFGHJK", time.Now()))}
	if err := ValidateDeviceCode(ok); err != nil {
		t.Fatalf("ValidateDeviceCode(ok) = %v", err)
	}
	for name, tc := range map[string]struct {
		d     DeviceCode
		field string
	}{
		"typed, not canonical": {DeviceCode{UserCode: "BCDF-GHJK", Hash: ok.Hash}, "user_code"},
		"lower case":           {DeviceCode{UserCode: "bcdfghjk", Hash: ok.Hash}, "user_code"},
		"empty user code":      {DeviceCode{Hash: ok.Hash}, "user_code"},
		"no key":               {DeviceCode{UserCode: "BCDFGHJK"}, "hash"},
	} {
		var re *RuleError
		if err := ValidateDeviceCode(tc.d); !errors.As(err, &re) || re.Field != tc.field {
			t.Errorf("%s: ValidateDeviceCode = %v; want a RuleError on %s", name, err, tc.field)
		}
	}
}
