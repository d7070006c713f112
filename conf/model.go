package conf

import "github.com/fluent-bit-out-mongodb/out_mongodb/model"

// Model is what c says of the stored documents.
func (c *Config) Model() model.Docs {
	d := model.Docs{
		Flat:             c.Mode == model.ModeFlat,
		Window:           c.BucketWindow,
		TagKey:           c.TagKey,
		TimeKey:          c.TimeKey,
		KeyReplaceDot:    c.KeyReplaceDot,
		KeyReplaceDollar: c.KeyReplaceDollar,
		Shard:            c.ShardKey,
	}
	for _, ix := range c.Indexes {
		d.Indexes = append(d.Indexes, ix)
	}
	return d
}
