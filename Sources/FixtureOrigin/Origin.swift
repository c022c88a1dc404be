public enum FixtureOriginPlaceholder {}
