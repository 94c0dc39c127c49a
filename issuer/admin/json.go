package admin

import "encoding/json"

// The records the CLI prints with --json name every field: a field without
// a value is null, never left out, so that a script can tell "none" from
// a field it misspelt, and every record of a list has the same keys. The
// string fields that may be empty are written through these methods (a
// pointer field is null by itself).

// nullable is s, or nil (JSON null) when s is empty.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type userViewFields UserView

// MarshalJSON writes a missing time zone, external ID or invalid note as
// null.
func (u UserView) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		userViewFields
		TimeZone   *string `json:"time_zone"`
		ExternalID *string `json:"external_id"`
		Invalid    *string `json:"invalid"`
	}{userViewFields(u), nullable(u.TimeZone), nullable(u.ExternalID), nullable(u.Invalid)})
}

type clientViewFields ClientView

// MarshalJSON writes a missing reject reason as null.
func (c ClientView) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		clientViewFields
		RejectReason *string `json:"reject_reason"`
	}{clientViewFields(c), nullable(c.RejectReason)})
}

type changeViewFields ChangeView

// MarshalJSON writes a type that stays, and a missing reject reason, as
// null.
func (c ChangeView) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		changeViewFields
		ClientType   *string `json:"client_type"`
		RejectReason *string `json:"reject_reason"`
	}{changeViewFields(c), nullable(c.ClientType), nullable(c.RejectReason)})
}
