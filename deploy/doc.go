// Package deploy holds no code: its test holds what deploys the plugin to
// what the README says.
package deploy
