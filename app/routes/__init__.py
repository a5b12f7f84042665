"""HTTP routes: participant pages and the JSON API."""
