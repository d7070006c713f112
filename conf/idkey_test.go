package conf

import "testing"

// id_key and id_action: accepted in mode flat, refused with the key, the
// value and why everywhere else.
func TestIDKey(t *testing.T) {
	c, err := parse(with("mode", "flat", "id_key", "eventId", "id_action", "Replace"))
	if err != nil {
		t.Fatal(err)
	}
	if c.IDKey != "eventId" || c.IDAction != IDReplace {
		t.Errorf("id_key %q id_action %q, want eventId replace", c.IDKey, c.IDAction)
	}
	if got, want := c.Changed(), "mode=flat id_key=eventId id_action=replace"; got != want {
		t.Errorf("Changed() = %s, want %s", got, want)
	}
	for _, kv := range [][]string{
		{"mode", "flat", "id_key", "__id"},
		{"mode", "flat", "id_key", "id", "include_fields", "id,msg"},
		{"mode", "flat", "id_key", "id", "capped_size", "1M"}, // keep inserts only
		{"id_action", "keep"},                                 // the default written out, in any mode
	} {
		if _, err := parse(with(kv...)); err != nil {
			t.Errorf("%q: %v", kv, err)
		}
	}
	for _, tt := range []struct {
		kv   []string
		want string
	}{
		{[]string{"id_key", "eventId"}, `id_key: invalid value "eventId": needs mode flat (a bucket holds many records under one _id; mode is bucket)`},
		{[]string{"mode", "flat", "id_key", "event.id"}, `id_key: invalid value "event.id": must be a top-level field name: nested paths are not supported, and a field named with a '.' is stored with key_replace_dot in its place`},
		{[]string{"mode", "flat", "id_key", "$id"}, `id_key: invalid value "$id": must not start with '$' (a leading '$' in a field name is stored as key_replace_dollar)`},
		{[]string{"mode", "flat", "id_key", "_id"}, `id_key: invalid value "_id": a record's own _id field is stored as __id: name that field (__id) instead`},
		{[]string{"mode", "flat", "id_key", "tag"}, `id_key: invalid value "tag": is tag_key, the field the plugin writes the tag to (a record's own tag is stored as _tag)`},
		{[]string{"mode", "flat", "id_key", "at", "time_key", "at"}, `id_key: invalid value "at": is time_key, the field the plugin writes the record time to (a record's own at is stored as _at)`},
		{[]string{"mode", "flat", "id_key", "id", "exclude_fields", "id"}, `id_key: invalid value "id": is in exclude_fields, so no stored record has it`},
		{[]string{"mode", "flat", "id_key", "id", "include_fields", "msg,level"}, `id_key: invalid value "id": is not in include_fields (msg,level), so no stored record has it`},
		{[]string{"mode", "flat", "id_key", "id", "id_action", "upsert"}, `id_action: invalid value "upsert": must be one of keep, replace`},
		{[]string{"mode", "flat", "id_action", "replace"}, `id_action: invalid value "replace": needs id_key (without it every document has the plugin's own _id)`},
		{[]string{"mode", "flat", "id_key", "id", "id_action", "replace", "capped_size", "1M"}, `id_action: invalid value "replace": cannot be combined with capped_size (MongoDB refuses a replacement that changes a document's size in a capped collection)`},
	} {
		_, err := parse(with(tt.kv...))
		if msgs := messages(err); len(msgs) != 1 || msgs[0] != tt.want {
			t.Errorf("%q:\n got %q\nwant %q", tt.kv, msgs, tt.want)
		}
	}
}
