package issuer

import "github.com/labstack/echo/v4"

// Placeholders until the authorization endpoint lands; the engineer writing
// authorize.go and me.go deletes this file.

func (s *Server) handleMe(c echo.Context) error { return echo.ErrNotImplemented }
