"""p3data's own templates (promptsource YAML), installed as `p3data.project_templates`."""
