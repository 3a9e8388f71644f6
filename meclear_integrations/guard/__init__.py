"""What runs around one clearance in production: gate, live bounds, component policy."""
