// Package password hashes and verifies platform users' passwords with
// argon2id (RFC 9106) at the OWASP minimum parameters (m=19 MiB, t=2, p=1),
// encoded as PHC strings:
//
//	$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>
//
// with salt and hash in unpadded standard base64. [Verify] reads the
// parameters from the string, so they can be raised later without breaking
// stored hashes. [Verify] also checks hashes imported from other systems
// (bcrypt, scrypt, PBKDF2-SHA256; see [Check] and formats.go), each with
// bounded cost parameters (at most [MaxMemoryKiB] of memory per check);
// [NeedsUpgrade] says when a verified hash should be replaced by [Hash].
// A [Gate] bounds how many verifications run at once (the
// login page puts every one, the dummy one included, through it). Package
// password knows nothing about users or storage.
package password
