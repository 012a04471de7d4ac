package httpapi

import "net/http"

// Placeholders until the trait handlers land.
func (s *Server) listTraits(w http.ResponseWriter, r *http.Request)  { notImplemented(w, r) }
func (s *Server) getTrait(w http.ResponseWriter, r *http.Request)    { notImplemented(w, r) }
func (s *Server) putTrait(w http.ResponseWriter, r *http.Request)    { notImplemented(w, r) }
func (s *Server) deleteTrait(w http.ResponseWriter, r *http.Request) { notImplemented(w, r) }
